"""Card helpers: the role a changed file plays, as cards, new and find group it."""

from __future__ import annotations

import pytest

from dossier.cards import classify_file

# One path per branch of the classifier, plus the orderings that decide ties
# (docs before CI file names, examples before tests, root-level config is Other).
ROLES = [
    (".github/workflows/pr-test.yml", "CI"),
    (".github/CODEOWNERS", "CI"),
    (".ci/run.sh", "CI"),
    ("ci/install.sh", "CI"),
    ("scripts/ci/amd_ci_install.sh", "CI"),
    ("scripts/ci_install_dependency.sh", "CI"),
    ("python/sglang/ci/utils.py", "CI"),
    ("sgl-kernel/.github/deps.yaml", "CI"),
    ("sgl-kernel/.github/requirements.txt", "CI"),
    ("sgl-kernel/.github/README.md", "Docs"),
    ("python/sglang/srt/configs/model.yaml", "Runtime"),
    ("python/pyproject.toml", "Runtime"),
    ("pyproject.toml", "Other"),
    ("requirements.txt", "Other"),
    ("Makefile", "Other"),
    ("setup.py", "Runtime"),
    ("docs/backend/server_arguments.md", "Docs"),
    ("docs/conf.py", "Docs"),
    ("docs_new/index.ipynb", "Docs"),
    ("README.md", "Docs"),
    ("python/sglang/README.MD", "Docs"),
    ("sgl-kernel/docs/api.rst", "Docs"),
    ("docs/run_suite.py", "Docs"),
    ("test/README.md", "Docs"),
    ("test/srt/run_suite.py", "CI"),
    ("scripts/run_suite.py", "CI"),
    ("tools/ci_install_dependency.sh", "CI"),
    (".claude/skills/qwen/SKILL.py", "Other"),
    ("examples/runtime/engine/offline.py", "Other"),
    ("examples/test_example.py", "Other"),
    ("example/omni.py", "Other"),
    ("test/srt/test_vision_openai_server.py", "Tests"),
    ("test/srt/nightly.yaml", "Tests"),
    ("tests/test_omni.py", "Tests"),
    ("python/sglang/tests/helpers.py", "Tests"),
    ("python/sglang/srt/test_utils.py", "Tests"),
    ("sglang_omni/models/qwen3_omni/thinker_test.py", "Tests"),
    ("benchmark/mmmu/bench_sglang.py", "Tests"),
    ("python/sglang/bench_serving.py", "Runtime"),
    ("python/sglang/srt/models/qwen2_5_vl.py", "Runtime"),
    ("Python/SGLang/SRT/Models/Qwen3_VL.py", "Runtime"),
]


@pytest.mark.parametrize("path,role", ROLES)
def test_classify_file(path, role):
    assert classify_file(path) == role
