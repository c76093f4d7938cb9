"""Pure re-implementations of the kube-scheduler rules the predicates and nodeorder plugins wrap.

Each module owns one Kubernetes concept (label selectors, node affinity, taints, inter-pod
affinity, topology spread, host ports) and works on the raw API dicts the model keeps, compiled
once per task so that checking one node is a few dictionary lookups. `podindex` keeps the
session's placed pods indexed by namespace and label for the rules that look at other pods.
Nothing here registers callbacks: the plugins do.
"""
