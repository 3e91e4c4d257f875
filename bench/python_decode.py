"""Decode + validate per message in Python, over the corpus bench/languages.ts writes (one
{"type": ..., "json": ...} per line: a message's payload as JSON text). Three variants, each
timed in alternating rounds, median per message, printed as one JSON object:

- package: the generated package's decode (parse as the contract says, validate strictly with
  the generated checks, build the pydantic models);
- checks: parse and validate only (the generated checks, no models);
- pydantic: pydantic's own validation alone (TypeAdapter.validate_json of the same models),
  which checks neither the contract's verdicts nor unknown fields.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from agent_gateway import codec
from agent_gateway._wire import parse_json
from agent_gateway.validators import CHECKS, Issue
from pydantic import TypeAdapter


def main(corpus_file: str, rounds: int) -> None:
    with open(corpus_file, encoding="utf-8") as handle:
        corpus = [(entry["type"], entry["json"]) for entry in map(json.loads, handle)]
    adapters = {name: TypeAdapter(codec.TYPES[name]) for name in {name for name, _ in corpus}}
    checks = [(CHECKS[name], text) for name, text in corpus]
    pydantic_inputs = [(adapters[name], text) for name, text in corpus]

    def package() -> None:
        for name, text in corpus:
            codec.decode(name, text, "strict")

    def checks_only() -> None:
        for check, text in checks:
            found: list[Issue] = []
            check(parse_json(text), "", found, True)
            if found:
                raise AssertionError("the corpus holds only valid messages")

    def pydantic_alone() -> None:
        for adapter, text in pydantic_inputs:
            adapter.validate_json(text)

    variants: dict[str, Callable[[], None]] = {"package": package, "checks": checks_only, "pydantic": pydantic_alone}
    for run in variants.values():  # warm-up
        run()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            gc.collect()
            started = time.perf_counter()
            run()
            samples[name].append((time.perf_counter() - started) / len(corpus) * 1e9)
    result: dict[str, Any] = {name: statistics.median(values) for name, values in samples.items()}
    result["messages"] = len(corpus)
    result["python"] = sys.version.split()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 7)
