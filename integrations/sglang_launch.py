"""Start SGLang's server with the ``constrain`` grammar backend registered.

    python -m constrain.integrations.sglang_launch --model-path MODEL --grammar-backend constrain [...]

Takes exactly ``python -m sglang.launch_server``'s arguments. Registration happens when
this module is imported, so SGLang's spawned scheduler processes (which re-import the
main module) register the backend too; the ``sglang.srt.plugins`` entry point installed
with ``constrain`` does the same for a plain ``sglang serve``.
"""

from __future__ import annotations

import os
import sys

from constrain.integrations.sglang import register

register()


def main(argv: list[str] | None = None) -> int:
    """Parse SGLang's server arguments and run its server (blocks until it stops)."""
    from sglang.launch_server import run_server
    from sglang.srt.plugins import load_plugins
    from sglang.srt.server_args import prepare_server_args
    from sglang.srt.utils import kill_process_tree

    load_plugins()
    server_args = prepare_server_args(sys.argv[1:] if argv is None else argv)
    try:
        run_server(server_args)
    finally:
        kill_process_tree(os.getpid(), include_parent=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
