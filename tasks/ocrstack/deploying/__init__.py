"""Container images, compose and Kubernetes manifests (issue 13): render and validate ``deploy/``.

* :mod:`.servers` renders the vLLM server's container args from the serve profiles
  (``ocrstack.backends.profiles``), the same argv ``ocrstack serve --dry-run`` prints.
* :mod:`.kustomize` builds a kustomize overlay in Python (the subset ``deploy/k8s`` uses).
* :mod:`.validate` checks manifests offline (kubernetes-validate, vendored CRD and compose
  schemas), lints Dockerfiles with hadolint and checks the pixi environments/tasks they name.
"""
