#!/usr/bin/env bash
# Times the template plugin from a copy to a served endpoint (docs/plugins.md, "Measuring"): the packed
# @tkgate/* tarballs stand in for the registry. Run from the checkout after `npm run build`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"; tarballs="$work/tarballs"; mkdir "$tarballs"
(cd "$repo" && npm pack --ignore-scripts --loglevel=error --pack-destination "$tarballs" \
  -w packages/core -w packages/cli -w plugins/plugin-internal -w plugins/plugin-http -w plugins/plugin-exec >/dev/null)
now() { date +%s.%N; }
start=$(now)
cp -r "$repo/examples/plugin-template" "$work/my-plugin"
cd "$work/my-plugin" && rm -rf dist node_modules ./*.tsbuildinfo
T="$tarballs" node -e '
  const fs = require("fs"); const t = (n) => `file:${process.env.T}/tkgate-${n}-0.1.0.tgz`;
  const p = JSON.parse(fs.readFileSync("package.json", "utf8"));
  p.devDependencies["@tkgate/core"] = t("core"); p.devDependencies["@tkgate/cli"] = t("cli");
  p.overrides = { "@tkgate/core": t("core"), "@tkgate/plugin-internal": t("plugin-internal"), "@tkgate/plugin-http": t("plugin-http"), "@tkgate/plugin-exec": t("plugin-exec") };
  fs.writeFileSync("package.json", JSON.stringify(p, null, 2));'
npm install --prefer-offline --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
installed=$(now)
npm rebuild better-sqlite3 --loglevel=error >/dev/null
built=$(now)
npm test 2>&1 | grep -E '^# (pass|fail)'
served=$(now)
echo "npm install: $(echo "$installed - $start" | bc) s; better-sqlite3 build: $(echo "$built - $installed" | bc) s; npm test (served): $(echo "$served - $built" | bc) s; total: $(echo "$served - $start" | bc) s"
rm -rf "$work"
