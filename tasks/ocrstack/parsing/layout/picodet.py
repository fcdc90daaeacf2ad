"""The PP-PicoDet steps around the layout model of :mod:`ocrstack.parsing.layout.rapid`: rapid-layout's
pre-processing (in float32, one pass per channel) and post-processing (box decoding restricted to
the candidates that can pass, then rapid-layout's own NMS), with the model call in between.

rapid-layout's ``PPPostProcess`` decodes the box distribution (a softmax over 8 bins for each of
4 sides) of every anchor point of the four feature maps (10,105 points for the 800 x 608 input)
and keeps the 1000 best of each map; then, per class, only points whose score passes
``conf_thresh`` go to NMS. :class:`Decode` takes the same top 1000 of each map, drops the points
whose best class score does not pass the threshold (no class can keep them), and decodes the
rest: each point is decoded on its own (the softmax, the bin weights and the sum run along its
row), so the boxes, scores and classes are the same to the bit (tests/parsing/test_layout.py
compares the two on corpus pages). Measured on zh_ctex_manual page 1 with the parse's malloc
settings (:mod:`ocrstack.core.memory`): 12.5 ms -> 1.4 ms a page; neither the float64
temporaries of whole maps (1-2 MB each) nor two copies of the model input
(``PPPostProcess.img_info`` copies it for its shape) are made.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from ocrstack.core.errors import ConfigError


def pp_module(wheel_dir: Path, name: str) -> Any:
    """Module ``name`` (``pre_process`` or ``post_process``) of rapid-layout's PP handler, run from
    its file in the wheel (``wheel_dir``: the ``rapid_layout`` package directory) without the
    package's ``__init__`` (which imports requests, omegaconf and its ONNX Runtime route: 21 MB
    resident and 0.11 s that the OpenVINO route never uses); the two files import only numpy,
    OpenCV and typing (rapid-layout 1.x).

    Raises:
        ConfigError: the file is missing from the wheel.
    """
    path = wheel_dir / "model_handler" / "pp" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"ocrstack_rapid_layout_pp_{name}", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ConfigError(f"{path} is missing from the rapid-layout wheel", "reinstall rapid-layout")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Decode:
    """rapid-layout's ``PPPostProcess`` (``post``: an instance, whose thresholds, strides, NMS and
    box warping are used as they are) with the decoding of :data:`post.strides` maps limited to
    the points that can pass (see the module docstring). Call it as ``PPPostProcess``:
    ``(ori_shape (h, w), x (1, 3, H, W) model input, preds)`` -> ``(boxes, scores, class names)``,
    boxes ``[x0, y0, x1, y1]`` in pixels of an image of ``ori_shape``."""

    def __init__(self, post: Any) -> None:
        self.post = post

    @property
    def labels(self) -> list[str]:
        """The class names, as ``PPPostProcess.labels``."""
        return self.post.labels

    def candidates(self, x: np.ndarray, preds: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(decoded boxes (n, 4) float64 in model-input pixels, their class scores (n, classes)
        float32), in rapid-layout's order: map by map, best first, only points whose best score
        passes ``conf_thres``."""
        post = self.post
        half = len(preds) // 2
        in_h, in_w = x.shape[2:]
        reg_max = int(preds[half].shape[-1] / 4 - 1)
        bins = np.expand_dims(np.arange(reg_max + 1), axis=0)
        boxes, scores = [], []
        for stride, dist, score in zip(post.strides, preds[half:], preds[:half], strict=False):
            dist, score = dist[0], score[0]
            cols = len(np.arange(in_w / stride))  # rapid-layout's meshgrid width (a float range)
            best = score.max(axis=1)
            top = np.argsort(best)[::-1][: post.nms_top_k]
            top = top[best[top] > post.conf_thres]
            rows, col = np.divmod(top, cols)
            ct_row, ct_col = (rows.astype(np.float64) + 0.5) * stride, (col.astype(np.float64) + 0.5) * stride
            center = np.stack((ct_col, ct_row, ct_col, ct_row), axis=1)
            d = post.softmax(dist[top].reshape((-1, reg_max + 1)), axis=1)
            d = np.sum(d * bins, axis=1).reshape((-1, 4)) * stride
            boxes.append(center + [-1, -1, 1, 1] * d)
            scores.append(score[top])
        return np.concatenate(boxes, axis=0), np.concatenate(scores, axis=0)

    def __call__(self, ori_shape, x: np.ndarray, preds: list[np.ndarray]):
        post = self.post
        bboxes, confidences = self.candidates(x, preds)
        picked, labels = [], []
        for k in range(confidences.shape[1]):
            probs = confidences[:, k]
            mask = probs > post.conf_thres
            if not mask.any():
                continue
            box_probs = np.concatenate([bboxes[mask, :], probs[mask].reshape(-1, 1)], axis=1)
            kept = post.hard_nms(box_probs, iou_thres=post.iou_thres, top_k=post.keep_top_k)
            picked.append(kept)
            labels.extend([k] * kept.shape[0])
        if not picked:
            return [], [], []
        found = np.concatenate(picked)
        # rapid-layout's img_info(ori_shape, x) without its two copies of the input (5.8 MB each,
        # for its shape): the input's (h, w) and its scale over ori_shape, float32 as it makes them
        in_h, in_w = x.shape[2:]
        in_shape = np.array([in_h, in_w], dtype=np.float32)
        scale = np.array([in_h / float(ori_shape[0]), in_w / float(ori_shape[1])], dtype=np.float32)
        found[:, :4] = post.warp_boxes(found[:, :4], in_shape)
        found[:, :4] /= np.concatenate([scale[::-1], scale[::-1]])
        boxes = [row[:4].tolist() for row in found]
        return boxes, [float(s) for s in found[:, 4]], [post.labels[k] for k in labels]


class PicoDet:
    """rapid-layout's ``PPModelHandler`` steps (pre-processing, the model, post-processing) around
    ``session`` (an :class:`~ocrstack.parsing.engines.ov_session.OvSession`), with rapid-layout's
    own pre- and post-processing code (:func:`pp_module`) made faster (:class:`Preprocess`,
    :class:`Decode`)."""

    def __init__(
        self, wheel_dir: Path, size: tuple[int, int], labels: list[str], conf: float, iou: float, session: Any
    ) -> None:
        self.pp_preprocess = Preprocess(pp_module(wheel_dir, "pre_process").PPPreProcess(size))
        self.pp_postprocess = Decode(pp_module(wheel_dir, "post_process").PPPostProcess(labels, conf, iou))
        self.session = session

    def __call__(self, img: np.ndarray) -> Any:
        """``img``: BGR uint8 (H, W, 3). Returns an object with ``boxes`` (x0, y0, x1, y1 in
        ``img`` pixels), ``scores`` and ``class_names``, as rapid-layout's ``RapidLayoutOutput``."""
        x = self.pp_preprocess(img)
        boxes, scores, names = self.pp_postprocess(img.shape[:2], x, self.session(x))
        return SimpleNamespace(boxes=boxes, scores=scores, class_names=names)


class Preprocess:
    """rapid-layout's ``PPPreProcess`` (resize to the model input, ``(x / 255 - mean) / std`` per
    channel, CHW, a batch of one, float32) computed in float32 in one pass per channel: its own
    float64 arithmetic took 0.05 s a page, this 0.005 s, with inputs equal to 5e-7 and the same
    blocks (tests/parsing/test_layout.py)."""

    def __init__(self, pp) -> None:  # rapid_layout PPPreProcess
        self.size: tuple[int, int] = (int(pp.size[0]), int(pp.size[1]))
        std = np.asarray(pp.std, np.float64)
        self._scale = (pp.scale / std).astype(np.float32)
        self._shift = (-np.asarray(pp.mean, np.float64) / std).astype(np.float32)

    def __call__(self, img: np.ndarray) -> np.ndarray:
        import cv2

        h, w = self.size
        if img.shape[:2] != (h, w):
            img = cv2.resize(img, (w, h))
        out = np.empty((1, 3, h, w), np.float32)
        for c in range(3):
            np.multiply(img[:, :, c], self._scale[c], out=out[0, c], dtype=np.float32)
            out[0, c] += self._shift[c]
        return out
