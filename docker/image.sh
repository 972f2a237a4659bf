#!/usr/bin/env bash
# `make image`: builds the container image from docker/Dockerfile with podman, without a Docker
# daemon or an image registry (docs/deploy.md):
#   1. a Debian 12 root filesystem, `debootstrap --variant=minbase bookworm`, kept in ROOTFS
#      (made once; ~200 MB);
#   2. imported into podman as BASE_IMAGE (once);
#   3. `podman build --pull=never --build-arg BASE=BASE_IMAGE` of the Dockerfile, tagged IMAGE;
#      the build stage installs its toolchain from Debian's packages and compiles polyprof;
#      the tools come from the build context (resources/, filled by `make`).
# Prints the image's size and the time taken. Environment (defaults):
#   IMAGE (localhost/polyprof:latest), BASE_IMAGE (localhost/polyprof-base:bookworm),
#   ROOTFS (/var/cache/polyprof/rootfs-bookworm), DEBIAN_MIRROR (http://deb.debian.org/debian)
set -euo pipefail
IMAGE=${IMAGE:-localhost/polyprof:latest}
BASE_IMAGE=${BASE_IMAGE:-localhost/polyprof-base:bookworm}
ROOTFS=${ROOTFS:-/var/cache/polyprof/rootfs-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)

for tool in podman debootstrap; do
    command -v "$tool" >/dev/null || {
        echo "make image: $tool is missing (make deps installs it: podman runc debootstrap)" >&2
        exit 1
    }
done
if [ ! -x "$ROOT/resources/python/py-spy" ]; then
    echo "make image: resources/ has no tools; run make deps && make first" >&2
    exit 1
fi

if ! podman image exists "$BASE_IMAGE"; then
    if [ ! -f "$ROOTFS/etc/debian_version" ]; then
        echo "debootstrap --variant=minbase bookworm $ROOTFS ($MIRROR)"
        rm -rf "$ROOTFS.tmp"
        mkdir -p "$(dirname "$ROOTFS")"
        if ! debootstrap --variant=minbase bookworm "$ROOTFS.tmp" "$MIRROR" \
            >"$ROOTFS.log" 2>&1; then
            tail -20 "$ROOTFS.log" >&2
            exit 1
        fi
        mv "$ROOTFS.tmp" "$ROOTFS"
    fi
    echo "podman import $ROOTFS as $BASE_IMAGE"
    tar -C "$ROOTFS" --numeric-owner -c . | podman import - "$BASE_IMAGE" >/dev/null
fi

echo "podman build -f docker/Dockerfile -t $IMAGE (base $BASE_IMAGE)"
podman build --isolation chroot --network host --pull=never --build-arg "BASE=$BASE_IMAGE" \
    -f "$ROOT/docker/Dockerfile" -t "$IMAGE" "$ROOT"
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
echo "image $IMAGE: $((size / 1000000)) MB ($size bytes), built in $(($(date +%s) - start)) s"
