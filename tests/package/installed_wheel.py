"""Run by .ci/run with the wheel installed in a fresh virtual environment, outside the repository: the
public API imports from the installed package (not the source tree), ships its data files, and builds the
platform from its own example values under its own testing helper.

    python tests/package/installed_wheel.py   # with the wheel's environment's python, from any folder
"""

import sys
from importlib.metadata import files
from pathlib import Path

import llm_platform
from llm_platform import LlmPlatform
from llm_platform.testing import evaluate, example_values, test_args

package = Path(llm_platform.__file__).resolve().parent
repository = Path(__file__).resolve().parents[2]
if package.is_relative_to(repository):
    sys.exit(f"llm_platform imported from the source tree ({package}), not from the installed wheel")
for data in ("tools/checkov.yaml", "tools/preflight/iam_reference/karpenter.json"):
    if not (package / data).is_file():
        sys.exit(f"the wheel lacks {data}")
# PEP 561: the marker that tells mypy and pyright the installed package is typed (else `import-untyped`)
if not (package / "py.typed").is_file() or "llm_platform/py.typed" not in {
    f.as_posix() for f in files("llm-platform") or []
}:
    sys.exit("the wheel lacks llm_platform/py.typed: type checkers skip the package")
recorded = evaluate(lambda: LlmPlatform("llm-dev", test_args(example_values())))
deployments = recorded.by_type("kubernetes:apps/v1:Deployment")
if not deployments:
    sys.exit("LlmPlatform registered no Deployment")
print(
    f"llm-platform {llm_platform.__version__} from {package}: {len(llm_platform.__all__)} public names, "
    f"LlmPlatform registered {len(recorded.created)} resources ({len(deployments)} Deployments)"
)
