"""A seccomp filter for the sandbox: no Unix socket can be opened.

The read-only filesystem does not stop a command from connecting to a daemon's socket in it
(`/run/docker.sock`, the D-Bus system bus, `/var/run/postgresql`): connecting is not writing.
As root such a connection can stop services, start containers or change a database; so in
the sandbox `socket(AF_UNIX, ...)` fails with EACCES (and io_uring, which could open one
without that call, is not there). The few readers that need a daemon (`netreaders`) run
without this filter, from their checked words.

The filter is a classic BPF program (what bubblewrap's `--seccomp FD` loads) written here,
for x86_64 and aarch64; on another architecture there is none, and `filter_program` says so.
"""

from __future__ import annotations

import os
import sys

__all__ = ["filter_program", "unix_socket_filter_fd"]

_AF_UNIX = 1
_EACCES = 13
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_X32_BIT = 0x40000000
# machine: (AUDIT_ARCH_*, socket, io_uring_setup)
_ARCHITECTURES = {
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
}


def filter_program(machine: str | None = None) -> bytes | None:
    """The BPF program for `machine` (default: this one's), or None where there is none."""
    found = _ARCHITECTURES.get(machine or os.uname().machine)
    if found is None:
        return None
    arch, socket_call, io_uring = found
    deny = _RET_ERRNO | _EACCES
    program = [
        (_LD_ABS, 0, 0, 4),  # 0: the architecture
        (_JEQ, 1, 0, arch),  # 1: native: go on; any other ABI is refused
        (_RET, 0, 0, deny),  # 2
        (_LD_ABS, 0, 0, 0),  # 3: the system call's number
        (_JGE, 5, 0, _X32_BIT),  # 4: x32 numbers: refused (-> 10)
        (_JEQ, 4, 0, io_uring),  # 5: io_uring_setup: refused (-> 10)
        (_JEQ, 0, 2, socket_call),  # 6: socket: look at its family (-> 7), else allow (-> 9)
        (_LD_ABS, 0, 0, 16),  # 7: args[0], the address family (low word)
        (_JEQ, 1, 0, _AF_UNIX),  # 8: AF_UNIX: refused (-> 10)
        (_RET, 0, 0, _RET_ALLOW),  # 9
        (_RET, 0, 0, deny),  # 10
    ]
    return b"".join(_instruction(*instruction) for instruction in program)


def _instruction(code: int, jump_true: int, jump_false: int, value: int) -> bytes:
    """One `struct sock_filter` in native byte order (what `struct.pack("=HBBI")` writes,
    without importing struct)."""
    order = sys.byteorder
    return code.to_bytes(2, order) + bytes((jump_true, jump_false)) + value.to_bytes(4, order)


def unix_socket_filter_fd() -> int:
    """A readable descriptor holding the program (for `bwrap --seccomp FD`), inheritable;
    -1 where there is no program for this architecture."""
    program = filter_program()
    if program is None:
        return -1
    read, write = os.pipe()
    try:
        os.write(write, program)
    finally:
        os.close(write)
    os.set_inheritable(read, True)
    return read
