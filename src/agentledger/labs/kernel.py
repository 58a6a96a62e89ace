"""What a lab command's error means when it is the kernel's: a feature this kernel lacks.

A lab runs in a user namespace, where the kernel loads no module on demand: a qdisc, filter or
link type whose module is not already loaded on the machine is "unknown" inside every lab
(netem, prio, sfq or wireguard on many cloud kernels), while `tc` and `ip` only print the
kernel's one line. `kernel_hint` adds what that line means and what to do.
"""

from __future__ import annotations

__all__ = ["kernel_hint"]

_NO_MODULES = (
    "a lab runs in a user namespace and cannot load kernel modules: load it on the machine "
    "first, as root (`modprobe {module}`), or use one this kernel has (try it in "
    "`unshare -Urn`)"
)
_HINTS = (
    ("Specified qdisc kind is unknown", "this kernel does not know that qdisc kind: the name is "
     "wrong, or its module (sch_KIND: sch_netem for netem) is not loaded", "sch_netem"),
    ("Specified filter kind is unknown", "this kernel does not know that filter kind: the name "
     "is wrong, or its module (cls_KIND: cls_u32 for u32) is not loaded", "cls_u32"),
    ("Unknown device type", "this kernel does not know that link type: the name is wrong, or "
     "its module (wireguard, vxlan, ...) is not loaded", "wireguard"),
    ("do you need to insmod", "this kernel lacks that netfilter table or its module is not "
     "loaded", "iptable_nat"),
    ("missing kernel module", "this kernel lacks that iptables match or target (its xt_ "
     "module is not loaded)", "xt_statistic"),
)  # fmt: skip


def kernel_hint(message: str) -> str:
    """The explanation to append to `message` (a lab step's or cycle's error), or ""."""
    for said, meaning, module in _HINTS:
        if said in message:
            return f"\n({meaning}; {_NO_MODULES.format(module=module)})"
    return ""
