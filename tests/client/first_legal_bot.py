"""A tiny external bot for the adapter test: JSON lines on stdin, the first legal move on stdout.

It uses nothing but the standard library, as a bot in another language would.
With a file name as its argument it writes there the type of every message
it received, one per line, so the test can check what the driver sent.
"""

import json
import sys
from typing import TextIO


def play(log: TextIO | None) -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if log is not None:
            log.write(message["type"] + "\n")
        if message["type"] == "decision":
            reply = {"type": "move", "game_id": message["game_id"], "request_id": message["request_id"],
                     "move": message["legal"][0]}
            print(json.dumps(reply), flush=True)


def main() -> None:
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as log:
            play(log)
    else:
        play(None)


if __name__ == "__main__":
    main()
