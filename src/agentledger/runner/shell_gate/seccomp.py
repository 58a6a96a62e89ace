"""A seccomp filter for the sandbox: no kernel keyring, and no Unix socket but for readers.

Kernel keyrings are not in any namespace bubblewrap makes: `add_key` into the user keyring
(`@u`) from inside the sandbox puts a key in the host's keyring of that uid (root's, seen in
the host's /proc/keys), and `keyctl` can clear, revoke or unlink the keys other processes of
that uid hold (Kerberos ccaches, fscrypt, NFS). So `add_key`, `request_key` and `keyctl`
fail with EACCES for every sandboxed command, the network readers included (as Docker's
default profile does).

The read-only filesystem does not stop a command from connecting to a daemon's socket in it
(`/run/docker.sock`, the D-Bus system bus, `/var/run/postgresql`): connecting is not writing.
As root such a connection can stop services, start containers or change a database; so in
the sandbox `socket(AF_UNIX, ...)` fails with EACCES (and io_uring, which could open one
without that call, is not there). The few readers that need a daemon (`netreaders`) get a
filter that allows Unix sockets (`sandbox_filter_fd(unix_sockets=True)`), from their checked
words; the keyring calls and io_uring stay refused for them.

The filter is a classic BPF program (what bubblewrap's `--seccomp FD` loads) written here,
for x86_64 and aarch64; on another architecture there is none, and `filter_program` says so.
"""

from __future__ import annotations

import os
import sys

__all__ = ["filter_program", "sandbox_filter_fd"]

_AF_UNIX = 1
_AF_VSOCK = 40  # not in any namespace: on a virtual machine it reaches the hypervisor's side
_EACCES = 13
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_X32_BIT = 0x40000000
# machine: (AUDIT_ARCH_*, socket, (io_uring_setup, add_key, request_key, keyctl))
_ARCHITECTURES = {
    "x86_64": (0xC000003E, 41, (425, 248, 249, 250)),
    "aarch64": (0xC00000B7, 198, (425, 217, 218, 219)),
}


def filter_program(machine: str | None = None, *, unix_sockets: bool = False) -> bytes | None:
    """The BPF program for `machine` (default: this one's), or None where there is none. It
    refuses io_uring, the keyring calls, `socket(AF_VSOCK, ...)` (no namespace holds it: on
    a virtual machine it reaches the host's services) and `socket(AF_UNIX, ...)` unless
    `unix_sockets`."""
    found = _ARCHITECTURES.get(machine or os.uname().machine)
    if found is None:
        return None
    arch, socket_call, refused = found
    deny = _RET_ERRNO | _EACCES
    # Each jump below counts the instructions it skips; `deny` is always the last one.
    families = (_AF_VSOCK,) if unix_sockets else (_AF_UNIX, _AF_VSOCK)
    tail = [
        (_JEQ, 0, len(families) + 1, socket_call),  # socket: look at its family, else allow
        (_LD_ABS, 0, 0, 16),  # args[0], the address family (low word)
    ]
    # each refused family: to `deny`, past the other families and the allow
    tail += [(_JEQ, len(families) - index, 0, family) for index, family in enumerate(families)]
    tail += [(_RET, 0, 0, _RET_ALLOW), (_RET, 0, 0, deny)]
    program = [
        (_LD_ABS, 0, 0, 4),  # the architecture
        (_JEQ, 1, 0, arch),  # native: go on; any other ABI is refused
        (_RET, 0, 0, deny),
        (_LD_ABS, 0, 0, 0),  # the system call's number
    ]
    checks = [(_JGE, 0, 0, _X32_BIT)] + [(_JEQ, 0, 0, number) for number in refused]
    for index, (code, _, _, value) in enumerate(checks):
        # x32 numbers and each refused call: to `deny`, past the other checks and the tail
        program.append((code, len(checks) - index - 1 + len(tail) - 1, 0, value))
    program += tail
    return b"".join(_instruction(*instruction) for instruction in program)


def _instruction(code: int, jump_true: int, jump_false: int, value: int) -> bytes:
    """One `struct sock_filter` in native byte order (what `struct.pack("=HBBI")` writes,
    without importing struct)."""
    order = sys.byteorder
    return code.to_bytes(2, order) + bytes((jump_true, jump_false)) + value.to_bytes(4, order)


def sandbox_filter_fd(*, unix_sockets: bool = False) -> int:
    """A readable descriptor holding the program (for `bwrap --seccomp FD`), inheritable;
    -1 where there is no program for this architecture."""
    program = filter_program(unix_sockets=unix_sockets)
    if program is None:
        return -1
    read, write = os.pipe()
    try:
        os.write(write, program)
    finally:
        os.close(write)
    os.set_inheritable(read, True)
    return read
