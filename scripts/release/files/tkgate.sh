#!/bin/sh
# tkgate, run by the Node runtime of this release (node/bin/node beside bin/): no node on PATH is needed.
# /usr/bin/tkgate (the .deb) or any other link to this file is resolved first to find the release's root.
set -e
self=$(readlink -f -- "$0")
root=${self%/bin/*}
exec "$root/node/bin/node" "$root/node_modules/@tkgate/cli/dist/main.js" "$@"
