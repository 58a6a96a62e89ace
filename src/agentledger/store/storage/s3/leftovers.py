"""What writers killed mid-way left in an S3 ledger (`S3Leftovers.leftovers`), and its removal
(`remove_leftover`, for `gc`): staging areas, claims of runs being published, and seals of
groups none of whose members landed; each in progress while its writer's presence is fresh."""

from __future__ import annotations

import json
import secrets
import threading

from agentledger.errors import InputError
from agentledger.identity import check_run_id, json_text_field
from agentledger.store.storage import Leftover, StorageBackend
from agentledger.store.storage.s3.client import ObjectStore, S3Location
from agentledger.store.storage.s3.lease import JournalLease, Presence
from agentledger.store.storage.s3.staging import S3StagedRun

__all__ = ["CLAIMS", "GROUP_AREAS", "GROUP_SEAL", "STAGING", "S3Leftovers"]

STAGING = ".staging/"
CLAIMS = ".claims/"
GROUP_SEAL = ".group"
GROUP_AREAS = ("decisions/",)  # the areas whose records are groups (a decision's two files)


class S3Leftovers(StorageBackend):
    """The part of `agentledger.store.storage.s3.S3Storage` that finds and removes leftovers."""

    uri: str
    location: S3Location
    store: ObjectStore
    lease: JournalLease
    presence: Presence
    _open: dict[int, S3StagedRun]
    _open_mutex: threading.Lock

    def _clear_unsealed(self, run_id: str) -> None:
        raise NotImplementedError

    def leftovers(self) -> list[Leftover]:
        found: list[Leftover] = []
        with self._open_mutex:  # this process's, with artifacts held in memory only perhaps
            areas = dict.fromkeys(
                run.area.split("/", 1)[1].rstrip("/") for run in self._open.values()
            )
        areas.update(
            dict.fromkeys(
                "/".join(key.split("/")[1:3])
                for key, _size in self.store.list(STAGING)
                if key.count("/") >= 3
            )
        )
        for area in areas:
            writer = area.split("/")[0]
            found.append(
                Leftover(
                    name=f"{STAGING}{area}",
                    path=self.location.describe(f"{STAGING}{area}/"),
                    in_progress=self.presence.alive(writer),
                )
            )
        found += self._unfilled_groups()
        for key, _size in self.store.list(CLAIMS):
            stored = self.store.get(key)
            if stored is None:
                continue  # published or discarded since the listing
            holder = json_text_field(stored.data, "writer")
            found.append(
                Leftover(
                    name=key,
                    path=self.location.describe(key),
                    in_progress=holder is not None and self.presence.alive(holder),
                )
            )
        return sorted(found, key=lambda leftover: leftover.name)

    def _unfilled_groups(self) -> list[Leftover]:
        """The seals of groups none of whose members landed: their writer was killed between
        the seal (its claim on the group) and the members. A group holding a member is a
        record, which the journal settles (`gc` completes it or removes it whole)."""
        filled: dict[str, bool] = {}
        for area in GROUP_AREAS:
            for key, _size in self.store.list(area):
                prefix, _, name = key.rpartition("/")
                if prefix.count("/") == 1:
                    filled[prefix] = filled.get(prefix, False) or name != GROUP_SEAL
        found = []
        for prefix in sorted(prefix for prefix, full in filled.items() if not full):
            seal = f"{prefix}/{GROUP_SEAL}"
            info = self.store.head(seal)
            if info is not None:
                found.append(
                    Leftover(
                        name=seal,
                        path=self.location.describe(seal),
                        in_progress=info.age_seconds <= self.lease.seconds,
                    )
                )
        return found

    def _remove_unfilled_group(self, seal: str) -> bool:
        """Remove the seal of a group that is still without members, under the journal lock
        (which its writer held from the seal to the members' journal entry)."""
        with self.journal.lock():
            if any(
                not key.endswith(f"/{GROUP_SEAL}")
                for key, _size in self.store.list(seal.removesuffix(GROUP_SEAL))
            ):
                return False  # filled meanwhile: a record, no longer debris
            self.store.delete([seal])
        return True

    def remove_leftover(self, leftover: Leftover) -> bool:
        name = leftover.name
        if name.endswith(f"/{GROUP_SEAL}") and name.startswith(GROUP_AREAS):
            return self._remove_unfilled_group(name)
        if name.startswith(CLAIMS):
            run_id = check_run_id(name[len(CLAIMS) :])
            stored = self.store.get(name)
            if stored is None:
                return True
            writer = json_text_field(stored.data, "writer")
            if writer is not None and self.presence.alive(writer):
                return False
            # Taken over first (compare-and-swap), so a writer reclaiming it meanwhile wins.
            mine = json.dumps({"writer": "gc", "nonce": secrets.token_hex(8)}).encode()
            if self.store.put(name, mine, if_match=stored.info.etag) is None:
                return False
            self._clear_unsealed(run_id)
            self.store.delete([name])
            return True
        if not name.startswith(STAGING) or name.count("/") != 2:
            raise InputError(f"{leftover.path} is not staging debris of {self.uri}")
        if self.presence.alive(name.split("/")[1]):
            return False
        self.store.delete(key for key, _size in self.store.list(name + "/"))
        return True
