"""Prints what python gave it, then ends as its argument says: ``raise``, ``interrupt`` or an exit code."""

import json
import sys


def end(how: str) -> None:
    if how == "interrupt":
        raise KeyboardInterrupt
    if how.isdigit():
        sys.exit(int(how))
    raise ValueError(f"ended on purpose: {how}")


def annotated(x: int) -> None:
    """Its annotation is a class, not a string: the bootstrap's __future__ imports are not the program's."""


main = sys.modules["__main__"]
print(json.dumps([__file__, sys.argv, sys.path[0], __name__, __package__, type(__loader__).__name__,
                  main.__dict__ is globals(), repr(annotated.__annotations__["x"])]), flush=True)
end(sys.argv[1])
