"""The shared base of the form definition models: pydantic config and constrained scalars.

Separate so that the condition language (:mod:`~erlmcp_py.core.forms._conditions`) and the field
models (:mod:`~erlmcp_py.core.forms._fields`) can share them without importing each other.
"""

from __future__ import annotations

from typing import Annotated, TypeAlias

from pydantic import (
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)
from pydantic.alias_generators import to_camel

Number: TypeAlias = StrictInt | Annotated[StrictFloat, AllowInfNan(False)]
Scalar: TypeAlias = StrictStr | StrictBool | StrictInt | Annotated[StrictFloat, AllowInfNan(False)]
FieldId: TypeAlias = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")]
NonNegative: TypeAlias = Annotated[StrictInt, Field(ge=0)]
Positive: TypeAlias = Annotated[StrictInt, Field(gt=0)]


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )
