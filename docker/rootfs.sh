#!/bin/sh
# Completes ROOT (a `make install DESTDIR=ROOT` tree) into the root filesystem of the image's
# `FROM scratch` stage (docker/Dockerfile):
#   rootfs.sh ROOT FILE...
# Each FILE is a path inside ROOT (the installed binary), a path of this system (copied into
# ROOT at the same place), or a library name (libcurl.so.4, found with ldconfig; polyprof loads
# it with dlopen, so ldd does not list it). Every shared library that ldd lists for them is
# copied in under its merged-/usr path (/lib, /lib64, /bin, /sbin are links into /usr, as on
# Debian 12), so the dynamic loader, /lib64/ld-linux-x86-64.so.2, is where the binaries say.
# Also: /bin/sh (dash, for the DaemonSet's probes), the CA bundle (uploads), /etc/passwd and
# /etc/group with root, and the directories polyprof and podman expect.
set -eu
root=$1
shift

mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64" "$root/etc/ssl/certs" \
    "$root/proc" "$root/sys" "$root/dev" "$root/run" "$root/tmp" "$root/var"
for d in bin sbin lib lib64; do
    [ -e "$root/$d" ] || ln -s "usr/$d" "$root/$d"
done
[ -e "$root/var/run" ] || ln -s ../run "$root/var/run"
chmod 1777 "$root/tmp"

# A file of this system, copied to ROOT under its directory's canonical path, with its own
# name (a library's soname link becomes a file of that name).
put() {
    dir=$(readlink -f "$(dirname "$1")")
    mkdir -p "$root$dir"
    cp -L "$1" "$root$dir/$(basename "$1")"
}

libs=$(mktemp)
for f in "$@"; do
    case $f in
    /*)
        if [ -e "$root$f" ]; then
            target=$root$f
        else
            put "$f"
            target=$f
        fi
        ;;
    *)
        target=$(ldconfig -p | awk -v n="$f" '$1 == n && /x86-64|AArch64|64bit/ { print $NF; exit }')
        [ -n "$target" ] || { echo "rootfs.sh: library $f not found (ldconfig -p)" >&2; exit 1; }
        put "$target"
        ;;
    esac
    # "name => /path (addr)" and "/path (addr)"; a static binary lists none
    ldd "$target" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' >>"$libs" || true
done
sort -u "$libs" | while read -r lib; do
    put "$lib"
done
rm -f "$libs"

[ -e "$root/usr/bin/sh" ] || ln -s dash "$root/usr/bin/sh"
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
