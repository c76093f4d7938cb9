"""deviceshare: shared GPUs (by memory or number), HAMi vGPU and HAMi Ascend vNPU, wired into the session (spec 1.2).

At session open every node with device capacity or a vGPU registration gets a ledger rebuilt from
the pod annotations of the tasks on it (spec 1.4), so device state is never persisted here and
cannot drift. The plugin then answers the predicate (does the pod's device request fit the node),
node order (device score x ScheduleWeight), and the allocate/deallocate events: an allocation
chooses the cards on the live ledger and puts the annotations for the bind on the task; a
deallocation (discard, eviction of a victim) releases the charges so a preemptor sees them free.

Unlike upstream, Allocate/Release run from this plugin rather than from `predicates`: enabling
`deviceshare` is enough. Node locks are intents in `ssn.node_locks`, applied by the binder.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter

from scheduler.framework.arguments import Arguments
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Event, EventHandler, Session
from scheduler.framework.status import AllocateError, Unfit
from scheduler.model.node import NodeInfo
from scheduler.model.objects import ALLOCATED_STATUSES, PodInfo, TaskInfo, TaskStatus
from scheduler.model.resources import QuantityError, parse_quantity
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare import gpushare, vgpu
from scheduler.plugins.deviceshare.ascend import AscendLedger, AscendTable
from scheduler.plugins.deviceshare.config import (
    ASCEND_MINDCLUSTER,
    DEFAULT_CONFIG,
    DeviceConfig,
    DeviceShareArgs,
    VnpuChip,
    device_config_from,
)
from scheduler.plugins.deviceshare.exclusive import ExclusiveRules
from scheduler.plugins.deviceshare.fit import FIT
from scheduler.plugins.deviceshare.gpushare import GpuShareLedger
from scheduler.plugins.deviceshare.locks import HeldLocks
from scheduler.plugins.deviceshare.requests import (
    AscendRequest,
    GpuShareRequest,
    VgpuContainerRequest,
    VgpuRequest,
    ascend_request,
    gpushare_request,
    pod_gpu_amount,
    vgpu_request,
)
from scheduler.plugins.deviceshare.vgpu import ScanCache, VgpuLedger, VgpuTable

VGPU_ERROR = "hami-vgpuDeviceSharing error"
ASCEND_ERROR = "ascend vNPU"
WHOLE_GPU = "nvidia.com/gpu"
_name = attrgetter("name")
# the annotations that name a pod's group: pods of one template differ there (one-pod jobs)
_GROUP_NAMES = frozenset((ann.GROUP_NAME, ann.GROUP_NAME_VOLCANO))
_TEMPLATES_LIMIT = 4096
# the other annotations of a pod that has none but its group name (never changed)
_NO_ANNOTATIONS: dict[str, str] = {}


# a request's answer not worked out yet
_UNASKED = object()


@dataclass(slots=True)
class PodDeviceRequests:
    """What one pod asks of each kind; errors are reasons for an impossible request."""

    share: GpuShareRequest | None = None
    share_error: str = ""
    vgpu: VgpuRequest | None = None
    vgpu_error: str = ""
    gpu_types: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    # HAMi Ascend: one request per chip kind the pod asks for, in configuration order
    ascend: tuple[tuple[VnpuChip, AscendRequest], ...] = ()
    ascend_error: str = ""

    @property
    def uses_any(self) -> bool:
        return bool(
            self.share
            or self.share_error
            or self.vgpu
            or self.vgpu_error
            or self.gpu_types
            or self.ascend
            or self.ascend_error
        )


_NO_REQUEST = PodDeviceRequests()


def plain_vgpu_of(r: PodDeviceRequests) -> VgpuRequest | None:
    """The vGPU request when that is all the pod asks, with no mode: its answer on every node is
    one entry of the shared whole-table scan (unless an exclusivity rule tracks the pod)."""
    req = r.vgpu
    if (
        req is None
        or not req.containers
        or req.mode
        or r.share is not None
        or r.share_error
        or r.vgpu_error
        or r.ascend_error
        or r.ascend
        or r.gpu_types is not None
    ):
        return None
    return req


def one_card_of(r: PodDeviceRequests) -> VgpuContainerRequest | None:
    """The vGPU container request of a pod whose one container asks one vGPU card, with no
    required mode and nothing else of any device kind (no error either); None for any other."""
    req = r.vgpu
    if (
        req is None
        or req.mode
        or req.n_containers != 1
        or len(req.containers) != 1
        or r.share is not None
        or r.ascend
        or r.share_error
        or r.vgpu_error
        or r.ascend_error
    ):
        return None
    cr = req.containers[0]
    return cr if cr.nums == 1 and cr.index == 0 else None


def _share_memory(pod: PodInfo) -> int:
    mem, err = pod_gpu_amount(pod, ann.GPU_MEMORY)
    return 0 if err else mem


def _merged(task: TaskInfo) -> dict[str, str]:
    if not task.bind_annotations:
        return task.pod.annotations
    return {**task.pod.annotations, **task.bind_annotations}


def _whole_gpu_types(pod: PodInfo) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(use, nouse) GPU types of a pod asking whole `nvidia.com/gpu` cards (spec 8), else None."""
    a = pod.annotations
    if ann.USE_GPUTYPE not in a and ann.NOUSE_GPUTYPE not in a:
        return None
    asks = False
    for c in pod.containers:
        raw = c.limits.get(WHOLE_GPU, c.requests.get(WHOLE_GPU))
        if raw is None:
            continue
        try:
            asks = asks or parse_quantity(raw) > 0
        except QuantityError:
            continue
    if not asks:
        return None
    use = tuple(s.upper() for s in ann.split_list(a.get(ann.USE_GPUTYPE)))
    nouse = tuple(s.upper() for s in ann.split_list(a.get(ann.NOUSE_GPUTYPE)))
    return use, nouse


class DeviceSharePlugin(Plugin):
    name = "deviceshare"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.args = DeviceShareArgs.parse(arguments)
        # the arguments' policy, read once: the hooks read it for every pod
        self._policy = self.args.policy
        self.config: DeviceConfig = DEFAULT_CONFIG
        self.table = VgpuTable()
        self._requests: dict[str, PodDeviceRequests] = {}
        # (container lists' ids, namespace, node name) -> (those lists, the other annotations,
        # the requests parsed): see _parse_template; emptied each session (the config may change)
        self._templates: dict[tuple, tuple[tuple, dict[str, str], PodDeviceRequests]] = {}
        # task uid -> node lock intents it took, withdrawn if the allocation is undone
        self._locks: dict[str, list[tuple[str, str, str]]] = {}
        # the (node, lock key) pairs of the session's lock intents, counted
        self._held = HeldLocks()
        self._time_seq = 0
        # the session's time as the vGPU annotations write it (Session.now is fixed at its start)
        self._now_text = "0"
        # task uid -> (its vgpu-ids-new value, the memory and cores that value names), kept when
        # the annotation is written: the session's close reads them instead of decoding it
        self._usage: dict[str, tuple[str, tuple[int, int]]] = {}
        self.ssn: Session | None = None
        self.exclusive: ExclusiveRules | None = None
        self._scans = ScanCache()
        # id(requests) -> (those requests, their plain vGPU request, their one-card container):
        # see _shapes_of; the entry keeps the requests alive, so that their id is not reused
        self._shapes: dict[
            int, tuple[PodDeviceRequests, VgpuRequest | None, VgpuContainerRequest | None]
        ] = {}
        # task uid -> its vGPU request when the predicate may take the short path (_plain_vgpu)
        self._plain: dict[str, VgpuRequest | None] = {}
        # task uid -> its HAMi Ascend asks when the predicate may take the short path (_plain_ascend)
        self._plain_npu: dict[str, tuple[tuple[VnpuChip, AscendRequest], ...] | None] = {}
        # chip kind -> flat chip state of the session's nodes of that kind (the compiled fit reads it)
        self._npu_tables: dict[str, AscendTable] = {}
        # node name -> device kind -> why its registration cannot be used
        self._unusable: dict[str, dict[str, str]] = {}
        # node name -> its ledger's position in `table` (nodes with a vGPU ledger of this session)
        self._vgpu_at: dict[str, int] = {}
        # the same positions by the session's node objects (NodeInfo hashes by identity)
        self._vgpu_at_node: dict[NodeInfo, int] = {}
        # (the _vgpu_at_node it was read from, the session's node list, the ledgers' positions in
        # `table` by node position, -1 for a node without one): see _rows_at
        self._rows: tuple[dict[NodeInfo, int], list[NodeInfo], array] | None = None
        # no exclusivity rule and no node locks: a one-card pod's commit may take the kept card
        # and charge it in one call (on_allocate)
        self._one_call_commit = False

    @classmethod
    def validate(cls, arguments: Arguments) -> list[str]:
        return list(DeviceShareArgs.parse(arguments).warnings)

    # -- session -------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._now_text = str(int(ssn.now))
        self._usage.clear()
        self._scans.clear()
        self._templates.clear()
        self._shapes.clear()
        self._npu_tables = {}
        a = self.args
        if a.vgpu or a.ascend_hami:
            self.config = device_config_from(ssn.configmaps, a)
            for w in self.config.warnings:
                ssn.warn(f"deviceshare: {w}")
        if a.ascend_mindcluster:
            ssn.warn(
                f"deviceshare: {ASCEND_MINDCLUSTER} (MindCluster 310P vNPU) is not supported by this scheduler; "
                "use the HAMi Ascend path (deviceshare.AscendHAMiVNPUEnable)"
            )
        share = a.gpu_sharing or a.gpu_number
        chips = self.config.vnpus if a.ascend_hami else ()
        # filled as the vGPU ledgers are built (_build_vgpu)
        self._vgpu_at = {}
        self._vgpu_at_node = {}
        for node in ssn.node_list:
            try:
                if share and ann.GPU_NUMBER in node.raw_capacity:
                    self._build_share(node)
                if a.vgpu and ann.VGPU_REGISTER in node.annotations:
                    self._build_vgpu(node)
                for chip in chips:
                    if chip.resource_name in node.allocatable.scalars:
                        self._build_ascend(node, chip)
            except Exception as exc:  # a node the decoders let through by mistake: that node only
                for kind in (gpushare.KIND, vgpu.KIND, *(c.common_word for c in chips)):
                    node.devices.pop(kind, None)
                    self._unusable.setdefault(node.name, {})[kind] = "internal error reading its devices"
                self._vgpu_at.pop(node.name, None)
                self._vgpu_at_node.pop(node, None)
                ssn.contain(self.name, f"node {node.name}", exc)
        self.table.flush()
        self.exclusive = (
            ExclusiveRules.build(a.exclusive_rules, ssn) if a.vgpu and a.exclusive_rules else None
        )
        self._one_call_commit = self.exclusive is None and not a.node_lock
        ssn.add_pre_predicate_fn(self.name, self.pre_predicate)
        ssn.add_predicate_fn(self.name, self.predicate, self.predicate_many, self.predicate_at)
        ssn.add_node_order_fn(self.name, self.node_order, self.node_order_many, self.score_shape)
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))

    def on_session_close(self, ssn: Session) -> None:
        """Queue accounting (spec 1.2): vGPU tasks count the memory and cores they really hold."""
        if not self.args.vgpu:
            return
        cfg = self.config
        mem_name, cores_name = cfg.memory_name, cfg.cores_name
        usage = self._usage
        key, held = ann.VGPU_IDS_NEW, ALLOCATED_STATUSES
        for job in ssn.jobs.values():
            for task in job.tasks.values():
                b = task.bind_annotations
                # the annotation first: a dict lookup, where the status's is a Python-level enum hash
                if key not in b or task.status not in held:
                    continue
                kept = usage.get(task.uid)
                if kept is not None and kept[0] is b[key]:
                    mem, cores = kept[1]
                else:
                    mem, cores = vgpu.vgpu_usage_of(b)
                old = task.resreq
                real = old.clone()
                real.scalars[mem_name] = mem * 1000.0
                real.scalars[cores_name] = cores * 1000.0
                job.allocated.sub_add(old, real)
                task.resreq = real

    def _build_share(self, node: NodeInfo) -> None:
        led = GpuShareLedger.from_node(node)
        if led is None:
            return
        for task in node.tasks.values():
            idx = ann.decode_gpu_index(_merged(task).get(ann.GPU_INDEX))
            if idx:
                led.add_pod(task.uid, _share_memory(task.pod), task.pod.phase, idx)
        node.set_device(gpushare.KIND, led)

    def _build_vgpu(self, node: NodeInfo) -> None:
        table = self.table
        # the usual node's row is queued, written with the others' after the nodes (flush)
        led = VgpuLedger.queued(node, self.config, table)
        if led is None:
            led, why = VgpuLedger.from_node(node, self.config, table)
            if led is None:
                self._unusable_node(node, vgpu.KIND, why)
                return
        if node.tasks:
            table.flush()  # the replay charges the node's rows
            for task in node.tasks.values():
                self._replay_vgpu(led, task)
        node.set_device(vgpu.KIND, led)
        # the ledger's position in the whole-table scans, by name and by the session's node object
        self._vgpu_at[node.name] = self._vgpu_at_node[node] = led.idx

    def _build_ascend(self, node: NodeInfo, chip: VnpuChip) -> None:
        table = self._npu_tables.get(chip.common_word)
        if table is None:
            table = self._npu_tables[chip.common_word] = AscendTable(chip)
        led, why = AscendLedger.from_node(node, chip, self.config, table)
        if led is None:
            if why:
                self._unusable_node(node, chip.common_word, f"{chip.common_word}: {why}")
            return
        for task in node.tasks.values():
            self._replay_ascend(led, task)
        node.set_device(led.kind, led)

    def _unusable_node(self, node: NodeInfo, kind: str, why: str) -> None:
        """A node that registers the device but unreadably: warned once per session, and pods
        using the kind do not fit there (upstream lets them through; the device plugin then
        fails them at container start)."""
        self._unusable.setdefault(node.name, {})[kind] = why
        if self.ssn is not None:
            self.ssn.warn_node(node.name, f"deviceshare: node {node.name}: {why}")

    @staticmethod
    def _replay_ascend(led: AscendLedger, task: TaskInfo) -> None:
        value = _merged(task).get(ann.ascend_allocated_key(led.kind))
        if value:
            led.add_pod(task.uid, ann.decode_generic_devices(value))

    @staticmethod
    def _replay_vgpu(led: VgpuLedger, task: TaskInfo) -> None:
        anns = _merged(task)
        ids = anns.get(ann.VGPU_IDS_NEW)
        if ids:
            led.add_pod(task.uid, ann.pod_group_key(task.namespace, anns), ann.decode_pod_devices(ids))

    # -- requests ------------------------------------------------------------------------------
    def requests_of(self, task: TaskInfo) -> PodDeviceRequests:
        """The pod's requests as its own parse gives them, group keys included."""
        r = self._shared_requests(task)
        req = r.vgpu
        if req is not None and req.group_key != ann.pod_group_key(task.namespace, task.pod.annotations):
            return self._regrouped(r, req, task.pod)
        return r

    def _shared_requests(self, task: TaskInfo) -> PodDeviceRequests:
        """The pod's requests, but for the vGPU group key (the template's, see _parse_template):
        what the hooks read. The allocation takes the pod's own group key from the pod."""
        r = self._requests.get(task.uid)
        if r is None:
            r = self._parse_template(task.pod)
            self._requests[task.uid] = r
        return r

    def _parse_template(self, pod: PodInfo) -> PodDeviceRequests:
        """_parse, once per pod template: pods of a template share (by identity) their container
        lists, which convert interns, and differ at most in their group name, which only the vGPU
        request's group keys read (its group_key is the template's unless the pod asks pod-group
        spread: requests_of gives the pod's own). Parsing cost ~18 us a pod, a quarter of a one-pod
        job's device work. The entry keeps the container lists alive, so that their ids are not
        reused."""
        anns = pod.annotations
        if _GROUP_NAMES.issuperset(anns):  # only a group name (a one-pod job's pod): nothing else
            rest = _NO_ANNOTATIONS
        else:
            rest = {k: v for k, v in anns.items() if k not in _GROUP_NAMES}
        inits = pod.init_containers
        # every empty list reads the same: 0 stands for it (pods built by hand have their own)
        ident = (id(pod.containers), id(inits) if inits else 0, pod.namespace, pod.node_name)
        hit = self._templates.get(ident)
        if hit is not None and rest is _NO_ANNOTATIONS and not hit[1]:
            return hit[2]  # no other annotation, so no pod-group spread: the template's requests
        if hit is not None and hit[1] == rest:
            r = hit[2]
            # without pod-group spread (the policy is in `rest`: the template's) the group name
            # only names who holds the charge, read at allocation: one request serves the pods
            # (one-pod jobs built one each, ~3 us and 2 objects a pod)
            if (
                r.vgpu is None
                or anns.get(ann.VGPU_PODGROUP_POLICY) != "spread"
                or r.vgpu.group_key == ann.pod_group_key(pod.namespace, anns)
            ):
                return r
            return self._regrouped(r, r.vgpu, pod)
        r = self._parse(pod)
        if len(self._templates) >= _TEMPLATES_LIMIT:
            self._templates.clear()
        self._templates[ident] = ((pod.containers, pod.init_containers), rest, r)
        return r

    @staticmethod
    def _regrouped(r: PodDeviceRequests, req: VgpuRequest, pod: PodInfo) -> PodDeviceRequests:
        """A template's requests with the vGPU group keys of `pod` (as vgpu_request sets them)."""
        group = ann.pod_group_key(pod.namespace, pod.annotations)
        spread = group if pod.annotations.get(ann.VGPU_PODGROUP_POLICY) == "spread" else ""
        # built field by field: dataclasses.replace reads the fields' list each call, 2x the cost
        vgpu_req = VgpuRequest(
            req.containers, req.n_containers, req.mode, req.use_uuids, req.nouse_uuids,
            req.use_types, req.nouse_types, spread, group,
        )  # fmt: skip
        return PodDeviceRequests(
            r.share, r.share_error, vgpu_req, r.vgpu_error, r.gpu_types, r.ascend, r.ascend_error
        )

    def _parse(self, pod: PodInfo) -> PodDeviceRequests:
        a = self.args
        r = PodDeviceRequests()
        if a.gpu_sharing or a.gpu_number:
            r.share, r.share_error = gpushare_request(pod, a.gpu_sharing, a.gpu_number)
        if a.vgpu:
            r.vgpu, r.vgpu_error = vgpu_request(pod, self.config)
        r.gpu_types = _whole_gpu_types(pod)
        if a.ascend_hami:
            asks: list[tuple[VnpuChip, AscendRequest]] = []
            for chip in self.config.vnpus:
                areq, err = ascend_request(pod, chip)
                if err:
                    r.ascend_error = f"{chip.common_word} {err}"
                    break
                if areq is not None and areq.containers:
                    asks.append((chip, areq))
            r.ascend = tuple(asks)
        return r if r.uses_any else _NO_REQUEST

    def _share_label(self, req: GpuShareRequest | None) -> str:
        return "GpuShare" if req is None or req.memory > 0 or not self.args.gpu_number else "GpuNumber"

    # -- predicate / score ---------------------------------------------------------------------
    def pre_predicate(self, task: TaskInfo) -> Unfit | None:
        """An impossible request fails once, with its reason, before any node is looked at."""
        r = self._requests.get(task.uid) or self._shared_requests(task)
        if r.share_error:
            return Unfit(f"{self._share_label(None)} {r.share_error}", resolvable=False)
        if r.vgpu_error:
            return Unfit(f"{VGPU_ERROR}: {r.vgpu_error}", resolvable=False)
        if r.ascend_error:
            return Unfit(f"{ASCEND_ERROR}: {r.ascend_error}", resolvable=False)
        return None

    def _plain_vgpu(self, task: TaskInfo) -> VgpuRequest | None:
        """The task's vGPU request when that is all it asks, with no mode and no exclusivity rule:
        its answer on every node is one entry of the shared whole-table scan."""
        uid = task.uid
        got = self._plain.get(uid, _UNASKED)
        if got is not _UNASKED:
            return got  # type: ignore[return-value]
        r = self._requests.get(uid) or self._shared_requests(task)
        shapes = self._shapes.get(id(r))  # _shapes_of's kept answer, without the call
        if shapes is None or shapes[0] is not r:
            shapes = self._shapes_of(r)
        req = shapes[1]
        ex = self.exclusive
        self._plain[uid] = None if ex is not None and ex.track(task.pod) else req
        return self._plain[uid]

    def _shapes_of(
        self, r: PodDeviceRequests
    ) -> tuple[PodDeviceRequests, VgpuRequest | None, VgpuContainerRequest | None]:
        """(r, plain_vgpu_of(r), one_card_of(r)), worked out once per requests object (the pods of
        a template share theirs)."""
        got = self._shapes.get(id(r))
        if got is None or got[0] is not r:
            got = self._shapes[id(r)] = (r, plain_vgpu_of(r), one_card_of(r))
        return got

    def _plain_ascend(self, task: TaskInfo) -> tuple[tuple[VnpuChip, AscendRequest], ...] | None:
        """The task's HAMi Ascend asks when that is all it asks (no other kind, no error): the
        predicate then reads only those chip kinds' ledgers."""
        uid = task.uid
        got = self._plain_npu.get(uid, _UNASKED)
        if got is not _UNASKED:
            return got  # type: ignore[return-value]
        r = self._shared_requests(task)
        plain = (
            bool(r.ascend)
            and r.share is None
            and (r.vgpu is None or not r.vgpu.containers)
            and not (r.share_error or r.vgpu_error or r.ascend_error)
            and r.gpu_types is None
        )
        self._plain_npu[uid] = r.ascend if plain else None
        return self._plain_npu[uid]

    def predicate(self, task: TaskInfo, node: NodeInfo) -> Unfit | None:
        # _plain_vgpu's kept answer, without the call
        req: VgpuRequest | None = self._plain.get(task.uid, _UNASKED)  # type: ignore[assignment]
        if req is _UNASKED:
            req = self._plain_vgpu(task)
        if req is not None:  # the general path below, with what cannot apply left out
            if self._unusable:
                broken = self._unusable.get(node.name)
                if broken and vgpu.KIND in broken:
                    return Unfit(f"{VGPU_ERROR}: {broken[vgpu.KIND]}", resolvable=False)
            vled = node.devices.get(vgpu.KIND)
            if vled is None:
                return None
            # the session's node: its answer brought up to date by the batch's one compiled call
            # (the usual ask is of the one node the last placement changed)
            if self._scans.misfits(self.table, req, self._policy, [node], self._vgpu_at_node) == 0:
                return None
            ok, why, _ = self._scans.node_fit(vled, req, self._policy)
            return None if ok else Unfit(f"{VGPU_ERROR}: {why}")
        asks = self._plain_ascend(task)
        if asks is not None:  # the same, for a pod asking HAMi Ascend chips only
            return self._ascend_misfit(asks, node)
        r = self._shared_requests(task)
        if r is _NO_REQUEST:
            return None
        bad = self.pre_predicate(task)
        if bad is not None:
            return bad
        if r.gpu_types is not None:
            miss = self._gpu_type_misfit(r.gpu_types, node)
            if miss:
                return Unfit(miss, resolvable=False)
        devs = node.devices
        broken = self._unusable.get(node.name)
        if broken:
            if r.vgpu is not None and r.vgpu.containers and vgpu.KIND in broken:
                return Unfit(f"{VGPU_ERROR}: {broken[vgpu.KIND]}", resolvable=False)
            for chip, _ in r.ascend:
                if chip.common_word in broken:
                    return Unfit(f"{ASCEND_ERROR}: {broken[chip.common_word]}", resolvable=False)
        if r.share is not None:
            led = devs.get(gpushare.KIND)
            # no ledger: the node has no such device; the resource-fit predicate rejects it (spec 6.5)
            if led is not None:
                f = led.fit(r.share, self._policy)
                if not f.ok:
                    return Unfit(f"{self._share_label(r.share)} {f.reason}")
        if r.vgpu is not None and r.vgpu.containers:
            vled = devs.get(vgpu.KIND)
            if vled is not None:
                ok, why, _ = self._vgpu_node_fit(vled, task, r.vgpu)
                if not ok:
                    return Unfit(f"{VGPU_ERROR}: {why}")
        return self._ascend_misfit(r.ascend, node, checked=True)

    def _ascend_misfit(
        self, asks: tuple[tuple[VnpuChip, AscendRequest], ...], node: NodeInfo, checked: bool = False
    ) -> Unfit | None:
        """Why the Ascend asks do not fit the node (an unusable registration first unless
        `checked`), or None."""
        if not checked:
            broken = self._unusable.get(node.name)
            if broken:
                for chip, _ in asks:
                    if chip.common_word in broken:
                        return Unfit(f"{ASCEND_ERROR}: {broken[chip.common_word]}", resolvable=False)
        devs = node.devices
        for chip, areq in asks:
            aled = devs.get(chip.common_word)
            # no ledger: the node has no such chip; the resource-fit predicate rejects it (spec 6.5)
            if isinstance(aled, AscendLedger):
                af = aled.fit(areq, self._policy)
                if not af.ok:
                    return Unfit(f"{ASCEND_ERROR}: {chip.common_word} {af.reason}")
        return None

    def _plain_positions(
        self, task: TaskInfo, nodes: list[NodeInfo]
    ) -> tuple[list[int] | None, VgpuRequest | None]:
        """For a task with a plain vGPU request (_plain_vgpu): the nodes' positions in the whole-table
        scan, or None when some node has no ledger there; and the request (None: no plain request).
        Either None: ask node by node."""
        req = self._plain_vgpu(task)
        if req is None:
            return None, None
        # by the node objects first: a lookup that reads neither the node nor its name (a cold
        # window asks ~400 nodes per shape); a node object the session did not open with is
        # looked up by name, as before
        at = list(map(self._vgpu_at_node.get, nodes))
        if None in at:
            at = list(map(self._vgpu_at.get, map(_name, nodes)))
        return (None if None in at else at), req  # type: ignore[return-value]

    def predicate_many(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[Unfit | None]:
        """predicate() for each node: a plain vGPU request reads every node's answer from one
        whole-table scan; a refusal, an unusable node and any other request ask node by node."""
        # _plain_vgpu's kept answer, without the call
        req: VgpuRequest | None = self._plain.get(task.uid, _UNASKED)  # type: ignore[assignment]
        if req is _UNASKED:
            req = self._plain_vgpu(task)
        if req is None or self._unusable:
            return [self.predicate(task, n) for n in nodes]
        # the session's node objects first: one compiled call finds their positions, brings the
        # changed ones up to date and counts the misfits (a pod asks ~50 nodes, mostly all fitting)
        misfits = self._scans.misfits(self.table, req, self._policy, nodes, self._vgpu_at_node)
        if misfits == 0:
            return [None] * len(nodes)
        at, _ = self._plain_positions(task, nodes)
        if at is None:
            return [self.predicate(task, n) for n in nodes]
        codes, _ = self._scans.answers(self.table, req, self._policy, at)
        return [None if codes[i] == FIT else self.predicate(task, n) for i, n in zip(at, nodes, strict=True)]

    def _rows_at(self, ssn: Session) -> array:
        """Each of the session's nodes' ledger position in the whole-table scans, by its position
        in ssn.node_list (-1: no vGPU ledger), read once per session from _vgpu_at_node (which
        on_session_open makes anew)."""
        kept = self._rows
        at_node, nodes = self._vgpu_at_node, ssn.node_list
        if kept is None or kept[0] is not at_node or kept[1] is not nodes or len(kept[2]) != len(nodes):
            kept = self._rows = (at_node, nodes, array("q", map(at_node.get, nodes, repeat(-1))))
        return kept[2]

    def predicate_at(self, task: TaskInfo, at: list[int]) -> list[int] | None:
        """predicate_many by node position (Session.add_predicate_fn's `at`): for a plain vGPU
        request, the places in `at` of the nodes it may refuse, read from the whole-table scan
        with no lookup per node; None (the list form answers) for any other request or while a
        node's registration is unusable."""
        req: VgpuRequest | None = self._plain.get(task.uid, _UNASKED)  # type: ignore[assignment]
        if req is _UNASKED:
            req = self._plain_vgpu(task)
        ssn = self.ssn
        if req is None or self._unusable or ssn is None:
            return None
        return self._scans.misfits_at(self.table, req, self._policy, at, self._rows_at(ssn))

    def node_order_many(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
        """node_order() for each node, a plain vGPU request's from one whole-table scan."""
        w = self.args.weight
        if w <= 0 or self._shared_requests(task) is _NO_REQUEST:
            return [0.0] * len(nodes)
        at, req = self._plain_positions(task, nodes)
        if at is None or req is None:
            return [self.node_order(task, n) for n in nodes]
        codes, scores = self._scans.answers(self.table, req, self._policy, at)
        # as device_score adds it: 0.0 plus the score where the request fits
        return [float(int((scores[i] if codes[i] == FIT else 0.0) + 0.5) * w) for i in at]

    def _vgpu_node_fit(self, led: VgpuLedger, task: TaskInfo, req: VgpuRequest) -> tuple[bool, str, float]:
        """(fits, reason, score) of `req` on one vGPU node, read from one whole-table scan.

        Pods under exclusivity rules and pods asking a mode the node lacks take the per-node fit,
        which gives the same answer with their exact reason.
        """
        if (self.exclusive is not None and self.exclusive.track(task.pod)) or (
            req.mode and req.mode != led.mode
        ):
            f = self._fit_vgpu(led, task, req)
            return f.ok, f.reason, f.score
        return self._scans.node_fit(led, req, self._policy)

    def _commit_segments(
        self, led: VgpuLedger, task: TaskInfo, req: VgpuRequest
    ) -> list[list[ann.DeviceEntry]]:
        """The segments of _fit_vgpu's cards at commit (AllocateError when it does not fit): the
        cards the predicate's scan chose on this node while its answer there is current (the same
        fit of the same state), else those of the fit afresh."""
        if self.exclusive is None:
            kept = self._scans.kept_segments(led, req, self._policy)
            if kept is not None:
                return kept
        f = self._fit_vgpu(led, task, req)
        if not f.ok:
            raise AllocateError(f"{VGPU_ERROR}: {f.reason}")
        return led.segments(req, f.picks)

    def _fit_vgpu(self, led: VgpuLedger, task: TaskInfo, req: VgpuRequest) -> vgpu.FitResult:
        """The vGPU fit, with the cards reserved by exclusivity rules (spec 6.7) closed to this pod."""
        ex = self.exclusive
        if ex is not None:
            closed = ex.closed_cards(task.pod, led)
            if closed:
                with led.capped(closed):
                    return led.fit(req, self._policy)
        return led.fit(req, self._policy)

    @staticmethod
    def _gpu_type_misfit(types: tuple[tuple[str, ...], tuple[str, ...]], node: NodeInfo) -> str:
        use, nouse = types
        product = node.labels.get(ann.GPU_PRODUCT_LABEL)
        if product is None:
            return f"node has no label {ann.GPU_PRODUCT_LABEL} to check {ann.USE_GPUTYPE}" if use else ""
        p = product.upper()
        if use and not any(t in p for t in use):
            return f"GPU type {product} is not in {ann.USE_GPUTYPE}"
        if not use and any(t in p for t in nouse):
            return f"GPU type {product} is in {ann.NOUSE_GPUTYPE}"
        return ""

    def device_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """Sum of the used kinds' device scores on the node (before rounding and weight)."""
        r = self._shared_requests(task)
        s = 0.0
        if r.share is not None:
            led = node.devices.get(gpushare.KIND)
            if led is not None:
                f = led.fit(r.share, self._policy)
                s += f.score if f.ok else 0.0
        if r.vgpu is not None and r.vgpu.containers:
            vled = node.devices.get(vgpu.KIND)
            if vled is not None:
                ok, _, score = self._vgpu_node_fit(vled, task, r.vgpu)
                s += score if ok else 0.0
        for chip, areq in r.ascend:
            aled = node.devices.get(chip.common_word)
            if isinstance(aled, AscendLedger):
                af = aled.fit(areq, self._policy)
                s += af.score if af.ok else 0.0
        return s

    def score_shape(self, task: TaskInfo) -> tuple[()] | None:
        """What node_order() reads of the task: nothing without a weight (the default: 0.0
        everywhere); otherwise None (the device request decides)."""
        return () if self.args.weight <= 0 else None

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        w = self.args.weight
        if w <= 0 or self._shared_requests(task) is _NO_REQUEST:
            return 0.0
        s = self.device_score(task, node)
        return float(int(s + 0.5) * w)  # round half up, then weight (spec 1.2)

    # -- events --------------------------------------------------------------------------------
    def _now(self) -> float:
        return self.ssn.now if self.ssn is not None else 0.0

    def _lock(self, task: TaskInfo, node: NodeInfo, key: str) -> None:
        """Record a node-lock intent (spec 1.5) or refuse the allocation."""
        if not self.args.node_lock or task.status == TaskStatus.PIPELINED:
            # a pipelined task is not bound this session: no device plugin will release a lock for it
            return
        if any(n == node.name and k == key for n, k, _ in self._locks.get(task.uid, ())):
            return  # the pod already holds it (several HAMi Ascend chip kinds share one lock name)
        ssn = self.ssn
        now = self._now()
        held = ssn is not None and self._held.held(ssn.node_locks, node.name, key)
        if held or ann.lock_decision(node.annotations.get(key), now) == "refuse":
            raise AllocateError(f"node {node.name} has been locked within 5 minutes ({key})")
        entry = (node.name, key, ann.lock_value(now))
        if ssn is not None:
            self._held.append(ssn.node_locks, entry)
        self._locks.setdefault(task.uid, []).append(entry)

    def _withdraw_locks(self, task: TaskInfo) -> None:
        for entry in self._locks.pop(task.uid, []):
            if self.ssn is not None:
                self._held.remove(self.ssn.node_locks, entry)

    def on_allocate(self, event: Event) -> None:
        task = event.task
        node = self.ssn.nodes.get(task.node_name) if self.ssn is not None else None
        if node is None or not node.devices:
            return
        if event.restore:
            self._restore(task, node)
            return
        # the requests the pod's pre-predicate parsed, read without a call (a call per pod and
        # hook was a measurable share of a one-pod job's device work); a request is never falsy
        r = self._requests.get(task.uid) or self._shared_requests(task)
        if r is _NO_REQUEST:
            return
        shapes = self._shapes.get(id(r))  # _shapes_of's kept answer, without the call
        if shapes is None or shapes[0] is not r:
            shapes = self._shapes_of(r)
        cr = shapes[2]
        if cr is not None and self._one_call_commit:
            # the usual pod: _allocate_vgpu's commit of the card its predicate's scan kept, when
            # that answer is current (else the general path below fits afresh)
            led = node.devices.get(vgpu.KIND)
            if led is None:
                return
            if led.clean and led.mig is None and task.uid not in led.pods:
                # charged, recorded and annotated in one compiled call (ScanCache.commit_kept)
                req: VgpuRequest = r.vgpu  # type: ignore[assignment]
                kept = self._scans.commit_kept(
                    led, req, self._policy, cr, task, node.name, self._now_text, self._usage
                )
                if kept is not None:
                    return
        # pre_predicate refuses exactly the requests with an error: asked only then
        if r.share_error or r.vgpu_error or r.ascend_error:
            bad = self.pre_predicate(task)
            if bad is not None:
                raise AllocateError(bad.reason)
        try:
            if r.share is not None:
                self._allocate_share(task, node, r.share)
            if r.vgpu is not None:
                self._allocate_vgpu(task, node, r.vgpu)
            for chip, areq in r.ascend:
                self._allocate_ascend(task, node, chip, areq)
        except AllocateError:
            self._release(task, node)
            raise

    def _restore(self, task: TaskInfo, node: NodeInfo) -> None:
        """An undone eviction: the task takes back the devices its annotations name."""
        led = node.devices.get(gpushare.KIND)
        if led is not None:
            idx = ann.decode_gpu_index(_merged(task).get(ann.GPU_INDEX))
            if idx:
                led.add_pod(task.uid, _share_memory(task.pod), task.pod.phase, idx)
        vled = node.devices.get(vgpu.KIND)
        if vled is not None:
            self._replay_vgpu(vled, task)
        for led in node.devices.values():
            if isinstance(led, AscendLedger):
                self._replay_ascend(led, task)

    def _allocate_share(self, task: TaskInfo, node: NodeInfo, req: GpuShareRequest | None) -> None:
        led = node.devices.get(gpushare.KIND)
        if req is None or led is None:
            return
        if req.memory > 0:
            self._lock(task, node, ann.LOCK_GPUSHARE)  # gpushare locks before choosing the card
        f = led.fit(req, self._policy)
        if not f.ok:
            raise AllocateError(f"{self._share_label(req)} {f.reason}")
        led.add_pod(task.uid, _share_memory(task.pod), task.pod.phase, f.cards)
        # strictly increasing within a session: the device plugin serves the smallest time first
        self._time_seq += 1
        task.bind_annotations[ann.GPU_INDEX] = ann.encode_gpu_index(f.cards)
        task.bind_annotations[ann.PREDICATE_TIME] = ann.encode_predicate_time(
            int(self._now() * 1e9) + self._time_seq
        )

    def _allocate_vgpu(self, task: TaskInfo, node: NodeInfo, req: VgpuRequest | None) -> None:
        led = node.devices.get(vgpu.KIND)
        if req is None or led is None or not req.containers:
            return
        written = None
        if self._one_kept_card(task, led, req):
            cr = req.containers[0]
            if self.args.node_lock:
                written = self._charge_kept_card(task, node, led, req, cr)
            else:  # _lock does nothing without node locks: all in one call
                ids = self._scans.commit_kept(
                    led, req, self._policy, cr, task, node.name, self._now_text, self._usage
                )
                if ids is not None:
                    return
        if written is not None:
            ids, use = written
        else:
            segments = self._commit_segments(led, task, req)
            self._lock(task, node, ann.LOCK_VGPU)  # vGPU locks after the live fit, before annotating
            # the pod's own group key: `req` may be its template's (see _parse_template)
            led.add_pod(task.uid, ann.pod_group_key(task.namespace, task.pod.annotations), segments)
            ids = ann.encode_pod_devices(segments)
            use = vgpu.usage_of_segments(segments)
        self._annotate_vgpu(task, node, ids, use)

    def _annotate_vgpu(self, task: TaskInfo, node: NodeInfo, ids: str, use: tuple[int, int] | None) -> None:
        """The bind annotations of a vGPU allocation whose `vgpu-ids-new` value is `ids` (`use`:
        the memory and cores it names, when known)."""
        if use is not None:  # what the session's close would decode from `ids`
            self._usage[task.uid] = (ids, use)
        now = self._now_text
        # key by key, in this order (the order the annotations are written in), without a dict per pod
        b = task.bind_annotations
        b[ann.VGPU_NODE] = node.name
        b[ann.VGPU_TIME] = now
        b[ann.VGPU_IDS_NEW] = ids
        b[ann.DEVICES_TO_ALLOCATE] = ids
        b[ann.BIND_PHASE] = ann.BIND_PHASE_ALLOCATING
        b[ann.BIND_TIME] = now

    def _one_kept_card(self, task: TaskInfo, led: VgpuLedger, req: VgpuRequest) -> bool:
        """Whether _allocate_vgpu may commit the card the predicate's scan kept, without the
        segments' objects: one container asking one card, no exclusivity rule, a `clean` ledger
        without MIG cards that does not hold the pod yet."""
        cs = req.containers
        return (
            self.exclusive is None
            and req.n_containers == 1
            and len(cs) == 1
            and cs[0].nums == 1
            and cs[0].index == 0
            and led.clean
            and led.mig is None
            and task.uid not in led.pods
        )

    def _charge_kept_card(
        self, task: TaskInfo, node: NodeInfo, led: VgpuLedger, req: VgpuRequest, cr: VgpuContainerRequest
    ) -> tuple[str, tuple[int, int] | None] | None:
        """The general commit of _allocate_vgpu for the usual pod (see _one_kept_card) under node
        locks: the kept card, the lock, the charge and the `vgpu-ids-new` value without the
        segments' objects. None, nothing done, when no answer is kept."""
        c = self._scans.kept_card(led, req, self._policy)
        if c < 0:
            return None
        self._lock(task, node, ann.LOCK_VGPU)
        return led.charge_one(task.uid, ann.pod_group_key(task.namespace, task.pod.annotations), cr, c)

    def _allocate_ascend(self, task: TaskInfo, node: NodeInfo, chip: VnpuChip, req: AscendRequest) -> None:
        led = node.devices.get(chip.common_word)
        if not isinstance(led, AscendLedger):
            return
        self._lock(task, node, ann.LOCK_HAMI)  # upstream locks before choosing the chips
        f = led.fit(req, self._policy)
        if not f.ok:
            raise AllocateError(f"{ASCEND_ERROR}: {chip.common_word} {f.reason}")
        segments = led.segments(f.picks)
        led.add_pod(task.uid, segments)
        task.bind_annotations.update(led.annotations(req, f.picks, self._now(), segments))

    def on_deallocate(self, event: Event) -> None:
        task = event.task
        node = self.ssn.nodes.get(task.node_name) if self.ssn is not None else None
        # by UID, whatever the pod asks: a replayed pod may hold devices without asking for them
        if node is not None and node.devices:
            self._release(task, node)

    def _release(self, task: TaskInfo, node: NodeInfo) -> None:
        """Free the task's charges and strip the annotations it would have been bound with."""
        led = node.devices.get(gpushare.KIND)
        if led is not None:
            led.remove_pod(task.uid)
        for k in ann.GPUSHARE_POD_KEYS:
            task.bind_annotations.pop(k, None)
        vled = node.devices.get(vgpu.KIND)
        if vled is not None:
            vled.remove_pod(task.uid)
        merged = _merged(task)
        if merged.get(ann.BIND_PHASE) != ann.BIND_PHASE_SUCCESS:
            for k in ann.VGPU_POD_KEYS:
                task.bind_annotations.pop(k, None)
        ascend_done = merged.get(ann.HAMI_BIND_PHASE) == ann.BIND_PHASE_SUCCESS
        for aled in node.devices.values():
            if isinstance(aled, AscendLedger):
                aled.remove_pod(task.uid)
                if not ascend_done:
                    for k in ann.ascend_pod_keys(aled.kind):
                        task.bind_annotations.pop(k, None)
        self._withdraw_locks(task)
