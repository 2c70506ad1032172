"""What inspect's ``inspect_ai`` entry point ``grading_council`` loads: importing it registers the scorer
``grading_council/council`` and its metrics, so ``inspect score LOG --scorer grading_council/council`` finds them.

inspect names an object of an installed (not editable) package after its top-level module, which here is
``council``, not the distribution's name: the scorer would be ``council/grading_council/council``, which no
``--scorer grading_council/...`` finds. It is registered under the entry point's name as well (inspect has no
public call for that, hence its registry's own).
"""

from inspect_ai._util.registry import RegistryInfo, registry_add, registry_info

from council.inspect import agreement_lift, council, deliberation_impact
from council.inspect._scorer import NAME

_info = registry_info(council)
if _info.name != NAME:
    registry_add(council, RegistryInfo(type="scorer", name=NAME, metadata=_info.metadata))

__all__ = ["agreement_lift", "council", "deliberation_impact"]
