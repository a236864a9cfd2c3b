#!/usr/bin/env bash
# Set up a machine for reins and build bin/reins. Safe to run twice.
#
# llama.cpp's cgo build (through github.com/ollama/ollama/llama) needs
# headers that the ollama module zip leaves out of llama.cpp's vendor
# folder: nlohmann/json and stb (Debian packages), and miniaudio.h, which
# this script copies from the Go module github.com/gen2brain/malgo.
# The first build of llama.cpp takes 5 to 15 minutes; Go caches it.
set -euo pipefail
cd "$(dirname "$0")/.."

MALGO=github.com/gen2brain/malgo@v0.11.24
DEBS=(nlohmann-json3-dev libstb-dev)

say() { printf 'setup: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

command -v go >/dev/null || die "Go is not installed: install Go 1.26 or later (https://go.dev/dl/), then run this again."
command -v gcc >/dev/null || command -v cc >/dev/null || die "no C compiler: install gcc (Debian: apt-get install build-essential)."

# 1. Debian packages with the headers llama.cpp includes.
missing=()
for p in "${DEBS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		say "installing ${missing[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	else
		die "missing packages: ${missing[*]}. Install them by hand, e.g. 'sudo apt-get install ${missing[*]}' (or your system's nlohmann-json and stb headers), then run this again."
	fi
fi

# Chromium, for the viewer's browser test (view.TestBrowserHover, driven
# by chromedp). Optional: without it that test skips with a loud message.
if ! command -v chromium >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		say "installing chromium (for the viewer's browser test; about a minute)"
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ||
			say "could not install chromium: the viewer's browser test will be skipped"
	else
		say "chromium is not installed: the viewer's browser test will be skipped (Debian: apt-get install chromium)"
	fi
fi

# 2. miniaudio.h, from the malgo Go module, where llama.cpp looks for it.
dest=/usr/local/include/miniaudio/miniaudio.h
src="$(go mod download -json "$MALGO" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')/miniaudio.h"
[ -f "$src" ] || die "could not fetch miniaudio.h from $MALGO"
if ! cmp -s "$src" "$dest" 2>/dev/null; then
	if mkdir -p "$(dirname "$dest")" 2>/dev/null && cp "$src" "$dest" 2>/dev/null; then
		say "installed $dest"
	else
		die "cannot write $dest: copy $src there by hand (as root), then run this again."
	fi
fi

# 3. Build. The first build compiles llama.cpp.
say "building bin/reins (the first build compiles llama.cpp: 5 to 15 minutes)"
go build -o bin/reins ./cmd/reins
say "ready: bin/reins"
