# Sourced by bench/device_acceptance.sh, from the repository root:
# bwrap from the carried Debian packages in .debs/ (the H200 machine cannot download it), unpacked into a temporary
# folder and put first on PATH; appends what it did to "$facts".
# The packages (git-ignored), made beforehand on a Debian 12 machine with network:
#   mkdir -p .debs && cd .debs && apt-get download bubblewrap libselinux1 libpcre2-8-0 libcap2
# Unpack bubblewrap; its libraries only where the machine lacks them (ldd says "not found").
tools=$(mktemp -d)
unpack() { dpkg-deb -x "$1" "$tools/root" 2>/dev/null || python3 - "$1" "$tools/root" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
offset = 8
while offset < len(data):  # an ar archive: 60-byte headers, members padded to even sizes
    name, size = data[offset:offset + 16].decode().strip(), int(data[offset + 48:offset + 58])
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(data[offset + 60:offset + 60 + size])).extractall(sys.argv[2])
    offset += 60 + size + size % 2
PY
}
if ! command -v bwrap >/dev/null; then
    unpack .debs/bubblewrap_*.deb
    real="$tools/root/usr/bin/bwrap"
    missing=$(ldd "$real" 2>&1 | grep -c "not found")
    mkdir -p "$tools/bin"
    if [ "$missing" -gt 0 ]; then
        for deb in .debs/lib*.deb; do unpack "$deb"; done
        libs="$tools/root/lib/x86_64-linux-gnu:$tools/root/usr/lib/x86_64-linux-gnu"
        # The carried libraries are for bwrap alone: the sandboxed command gets the caller's LD_LIBRARY_PATH back.
        printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s --setenv LD_LIBRARY_PATH "%s" "$@"\n' \
            "$libs" "$real" "${LD_LIBRARY_PATH:-}" >"$tools/bin/bwrap"
        chmod +x "$tools/bin/bwrap"
    else
        ln -s "$real" "$tools/bin/bwrap"
    fi
    export PATH="$tools/bin:$PATH"
    echo "bwrap: carried Debian package, $missing library(ies) missing here and carried too" >>"$facts"
fi
