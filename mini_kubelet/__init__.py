"""mini_kubelet: a small Python reimplementation of the Kubernetes v1.27 kubelet, for teaching."""
