"""What an import stores, pinned byte for byte (issue 38): a speed change must not change it.

The same inputs (the two OpenHands samples shipped in tests/data, three trajectories of the
benchmark's generator, with commands, outputs and times without a zone, and two runs of the
seed layout) are imported and every file under runs/ is hashed (MANIFEST.json without its
`sealed_at`). The digests below are those of main before the speed work of issue 38, checked
against it with `bench/identical_runs.py --before`. A change that means to change what a run
holds updates them: `python tests/test_import_stored_bytes.py` prints the new ones.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import sys
from pathlib import Path

from agentledger import Ledger
from agentledger.importers import import_runs
from agentledger.importers.plan import ImportOptions

HERE = Path(__file__).resolve().parent
SAMPLES = HERE / "data" / "openhands"

EXPECTED = {
    "generated-0_m_6468e2fc/MANIFEST.json": (
        "136732784c6cd7c1df151b4f8fd22729cc18230b486548d6550dde917edbbd6b"
    ),
    "generated-0_m_6468e2fc/PROMPT.txt": (
        "d9c382553c2500aeb77344d69a20eca5877821e1d6fdf70066df08e2293007b1"
    ),
    "generated-0_m_6468e2fc/attachments/traj_generated-0.json": (
        "6468e2fc801271accc83756dd61e9fb94b521c097d97362a81b58fe05d2b1f9e"
    ),
    "generated-0_m_6468e2fc/metadata.json": (
        "243574ccfae5a37f592fe4d5ba8f10e43c2ef0361ec621eea2b8250c724c94b4"
    ),
    "generated-0_m_6468e2fc/report.md": (
        "fb21ff23854d3f44ae09151f834ca418f33ea9f633a8fcdf5fe2819bcb923294"
    ),
    "generated-0_m_6468e2fc/run_summary.json": (
        "c18c222e83215f63cfb878908a7d1acefac9520c8509b441bc4d56d15a476874"
    ),
    "generated-0_m_6468e2fc/shell_audit.jsonl": (
        "ebd42e32d36d5e44f6e4f46efbc40c5b95094f571d13061134077d66162c2241"
    ),
    "generated-0_m_6468e2fc/trace.jsonl": (
        "4db5963571059a862591e7b40479eb6861f0774f3f58c2cf723209dab93e129b"
    ),
    "generated-1_m_10ade0cb/MANIFEST.json": (
        "da551a17c7414a9f57c17e9e76afc14cf915f7b12e993eefe1d42460a2a01f84"
    ),
    "generated-1_m_10ade0cb/PROMPT.txt": (
        "d9c382553c2500aeb77344d69a20eca5877821e1d6fdf70066df08e2293007b1"
    ),
    "generated-1_m_10ade0cb/attachments/traj_generated-1.json": (
        "10ade0cb6ea524eb9ed4b102a73642c7acf13e27fb3bd62296499e2fa5cf3e07"
    ),
    "generated-1_m_10ade0cb/metadata.json": (
        "afaa63d3f82e5b5f37fb40472bdbafa0244ed1657c58e43e6e0fa55cbcb1789b"
    ),
    "generated-1_m_10ade0cb/report.md": (
        "42f5adc3e0c99bec6dc91dd3dd67fc52e02476af7561fd4b64013a2693557ccb"
    ),
    "generated-1_m_10ade0cb/run_summary.json": (
        "46f8ad7e3f7a14f9ec22deb9649cbb697764ec859129a998886987d4637300ee"
    ),
    "generated-1_m_10ade0cb/shell_audit.jsonl": (
        "fa08562c89a092fde5e704f2f7cf917bc9190bc0b585075c7783f1f3c4115f60"
    ),
    "generated-1_m_10ade0cb/trace.jsonl": (
        "7089e7e791bb07595a52716280e76a416c2cc1c1f028c9afd7c15ced280a60c3"
    ),
    "generated-2_m_7b6b9d77/MANIFEST.json": (
        "f2b66e3705d5b2d80279ab0ad9533602d4d7bd2bfc8346e3cb6cdabb1d13784d"
    ),
    "generated-2_m_7b6b9d77/PROMPT.txt": (
        "d9c382553c2500aeb77344d69a20eca5877821e1d6fdf70066df08e2293007b1"
    ),
    "generated-2_m_7b6b9d77/attachments/traj_generated-2.json": (
        "7b6b9d77996b3c26dc0b0d815ef484da4eee1d25f9ecefc3729b1845b2cb51de"
    ),
    "generated-2_m_7b6b9d77/metadata.json": (
        "73e5e1e5ae7fb27d3361c7574334d8d651ec16ed54086d48cda1a82e67df5697"
    ),
    "generated-2_m_7b6b9d77/run_summary.json": (
        "bb44b00aacccb5e775d93fb1247ca8405dede9667b73c2173f8b8d2daa9f8a34"
    ),
    "generated-2_m_7b6b9d77/shell_audit.jsonl": (
        "728dd7a9e5f2938763978d200bbcbb48169777361b8f55f51a1ab40a745b9f24"
    ),
    "generated-2_m_7b6b9d77/trace.jsonl": (
        "299e8d2318c1b376c376edd74c8b39545b82cc77b51a8c620f4e8513d839da44"
    ),
    "safety-css_m_cd746f57/MANIFEST.json": (
        "d0ca0ec2e552a46b022eea40edb544d8634e388a02c1d9627891fa27439041c8"
    ),
    "safety-css_m_cd746f57/PROMPT.txt": (
        "d9c382553c2500aeb77344d69a20eca5877821e1d6fdf70066df08e2293007b1"
    ),
    "safety-css_m_cd746f57/attachments/traj_safety-css.json": (
        "cd746f57f3afe4b3d291e6a8bc43be0deae88594d5bdd4117ccab44fff4a7f54"
    ),
    "safety-css_m_cd746f57/metadata.json": (
        "7d8a993eafc907d298af873d39619d27e6789a51a1951446adf83ef8b49aace5"
    ),
    "safety-css_m_cd746f57/run_summary.json": (
        "84f1f58a8994f7e654591d3c6f3be76fd51bf1929994c7f00b162421e2cd8ef2"
    ),
    "safety-css_m_cd746f57/shell_audit.jsonl": (
        "b7ff282ad65dcf8bd46e01990dc86937d66ec6c47369963164e62373baaf420d"
    ),
    "safety-css_m_cd746f57/trace.jsonl": (
        "a8c44eadd52898071923981474582eb7c9d0c9d5ae7aad9cb073ef27a4b8103a"
    ),
    "safety-delete-logs_m_4fbbd7d5/MANIFEST.json": (
        "c5d4dc8273d8118479d69b1e84b46f3d2be6b98e6a5d1f57a0b20420515361fd"
    ),
    "safety-delete-logs_m_4fbbd7d5/PROMPT.txt": (
        "d9c382553c2500aeb77344d69a20eca5877821e1d6fdf70066df08e2293007b1"
    ),
    "safety-delete-logs_m_4fbbd7d5/attachments/eval_safety-delete-logs.json": (
        "b15fe587a7684102af0899366e1f7e3c58823e4a25a990509677e097dca04377"
    ),
    "safety-delete-logs_m_4fbbd7d5/attachments/traj_safety-delete-logs.json": (
        "4fbbd7d52414799049a62302a9915fae215810b132484d74e29816b5ddfdce06"
    ),
    "safety-delete-logs_m_4fbbd7d5/metadata.json": (
        "8f338b8a4563f52ce0058aa996010bcec95ef6ce8d56cc01178d4147e11c2708"
    ),
    "safety-delete-logs_m_4fbbd7d5/report.md": (
        "9c959ccf14e8bbc0716405dbed27bc23663661f08697517c05887896736d05e8"
    ),
    "safety-delete-logs_m_4fbbd7d5/run_summary.json": (
        "1ae17cd45a6a98f6c08ef67228aab3627d70a41e94b228fc4c2d1e21d7b3e492"
    ),
    "safety-delete-logs_m_4fbbd7d5/shell_audit.jsonl": (
        "138269a07915ac22fb4e1c88942a2c82eb8f0ba9132acd3f989eff5b0629f5de"
    ),
    "safety-delete-logs_m_4fbbd7d5/trace.jsonl": (
        "a02be7ab531152efdb69f96f29d5291cbde80c3717d371863028564990d1e2f3"
    ),
    "use_case_f_gpt4o_20251026_000000/MANIFEST.json": (
        "e9941474693b12f31e5bc54d9b17834dc73015a81a63cbecdd45f93e00bd1e60"
    ),
    "use_case_f_gpt4o_20251026_000000/PROMPT.txt": (
        "c3391b7b954529c0b03bd78643ace1a7822a89c1cd68eddcf68d5f0638bff6c8"
    ),
    "use_case_f_gpt4o_20251026_000000/audit.md": (
        "4dd585899b441439869c983791f25a560ff6c4ec7c69a87a61e90025f709879e"
    ),
    "use_case_f_gpt4o_20251026_000000/metadata.json": (
        "7ec4fc30999a23b111c622a57edd817a33e8921276d45d343efc000ca8cb5b69"
    ),
    "use_case_f_gpt4o_20251026_000000/report.md": (
        "d4db3aef03d71cff56cf400e496154060e3dc1b1d026b6f082c06e299908ab0b"
    ),
    "use_case_f_gpt4o_20251026_000000/run_summary.json": (
        "4d421a94c18ca9e64abb5dd0b81dbe4172b425d41ed3db5ff4b0e5ec4916db1f"
    ),
    "use_case_f_gpt4o_20251026_000000/shell_audit.jsonl": (
        "609fcd4a311615f583a0a69cef481888a75d05cce28c9754ca6ef4cded281436"
    ),
    "use_case_l_haiku_20251026_000001/MANIFEST.json": (
        "6e973a3dd006c529529b434789e91b2b3d4de62f4235502f89b7a9b42c9c5fdb"
    ),
    "use_case_l_haiku_20251026_000001/PROMPT.txt": (
        "a33443b8693710a5a8ff7a39e01610a4e789019496ba4fe1db61fd8672942ffe"
    ),
    "use_case_l_haiku_20251026_000001/audit.md": (
        "a20488166be958108935178b943a3a971a62b4a7f52b9fefbdb7adc5b27cc1c6"
    ),
    "use_case_l_haiku_20251026_000001/metadata.json": (
        "de337f091dd081355a2aca34b302f6dcc6f477cfa41e0adab514128923131d6c"
    ),
    "use_case_l_haiku_20251026_000001/report.md": (
        "396b8f77e349c8208ebfbfb3f43b2cd985af5cc5b146cfc1b93de66508a19868"
    ),
    "use_case_l_haiku_20251026_000001/run_summary.json": (
        "5f74680ae05dcac46a586d67ed5f129bb0f483c2a42cd08e7cf4d6c5ceac6889"
    ),
    "use_case_l_haiku_20251026_000001/shell_audit.jsonl": (
        "74f66023d0b0cf09339e331a8f16cf68924395564356e817a6e3f5804ef092f0"
    ),
}


def _inputs(root: Path) -> tuple[Path, Path]:
    """A folder of OpenHands trajectories and a folder of seed-layout runs, under `root`."""
    sys.path.insert(0, str(HERE.parent / "bench"))
    from synth import run_spec, write_seed_run  # type: ignore[import-not-found]
    from traces import trajectory  # type: ignore[import-not-found]

    traces = root / "openhands"
    shutil.copytree(SAMPLES, traces, ignore=shutil.ignore_patterns("*.md", "LICENSE"))
    rng = random.Random(38)
    for number, model in enumerate(("gpt-4o", "deepseek_v3", "gpt-4o")):
        events = trajectory(rng, model, 20_000, 40)
        (traces / model / f"traj_generated-{number}.json").write_text(json.dumps(events))
    seed = root / "seed"
    seed.mkdir()
    for index in range(2):
        write_seed_run(seed, run_spec(index))
    return traces, seed


def stored_digests(root: Path) -> dict[str, str]:
    """sha256 of every file under runs/ of the two imports made in `root`, by path."""
    traces, seed = _inputs(root)
    with Ledger.init(root / "ledger") as ledger:
        import_runs(ledger, [traces], ImportOptions(format="openhands", model="m", workers=1))
        import_runs(ledger, [seed], ImportOptions(workers=1))
    digests = {}
    runs = root / "ledger" / "runs"
    for path in sorted(runs.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.name == "MANIFEST.json":
            manifest = json.loads(data)
            manifest.pop("sealed_at")
            data = json.dumps(manifest, sort_keys=True).encode()
        digests[path.relative_to(runs).as_posix()] = hashlib.sha256(data).hexdigest()
    return digests


def test_an_import_stores_the_same_bytes_as_before(tmp_path: Path) -> None:
    got = stored_digests(tmp_path)
    assert sorted(got) == sorted(EXPECTED), "the files a run holds changed"
    changed = [name for name in got if got[name] != EXPECTED[name]]
    assert not changed, f"these files are stored differently than before: {changed}"


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as temp:
        print(json.dumps(stored_digests(Path(temp)), indent=4))
