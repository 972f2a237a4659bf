/* Container names of processes (decisions in
 * docs/containers-and-appids.md).
 *
 * The container id is the last 64-hex run of the first /proc/<pid>/cgroup line that has one.
 * Names come, without gRPC, from (first wins on duplicate ids):
 *   1. the Docker engine API over its unix socket (GET /containers/json, running containers,
 *      1 s timeout): Names[0] without the leading "/";
 *   2. Docker's on-disk <host_root>/var/lib/docker/containers/<id>/config.v2.json ("Name");
 *   3. kubelet's log links <host_root>/var/log/containers/<pod>_<ns>_<container>-<id>.log ->
 *      /var/log/pods/<ns>_<pod>_<uid>/<container>/<restart>.log, written dockershim-style as
 *      k8s_<container>_<pod>_<ns>_<uid>_<restart> (containerd and CRI-O);
 *   4. Podman's <host_root>/var/lib/containers/storage/overlay-containers/containers.json
 *      (names[0]).
 * Sources 1, 3 and 4 are listed in full on a cache miss, at most once per session; source 2 is
 * read per id. Ids that no source knows are cached as "" until the next session; known names
 * are kept across sessions (the cache is dropped when it exceeds 8192 ids). Files are read
 * with size bounds and validated; a missing or malformed source gives "" (one debug line when
 * no source exists at all). Thread-safe: one mutex around the caches. */
#ifndef PP_CONTAINERS_H
#define PP_CONTAINERS_H

typedef struct pp_containers pp_containers;

/* host_root: where the host's files are seen: "/proc/1/root" in production, a fixture directory
 * in tests. docker_sock: the Docker engine socket, relative to host_root
 * ("/var/run/docker.sock"), or NULL to skip the API. NULL on OOM. */
pp_containers *pp_containers_new(const char *host_root, const char *docker_sock);
void pp_containers_free(pp_containers *c);

/* Parses /proc/<pid>/cgroup text ("hier:controllers:path" lines; cgroup v1 and v2; docker,
 * kubepods, ECS, podman libpod-<id>.scope, systemd docker-/cri-containerd-/crio-<id>.scope):
 * the last [a-f0-9]{64} match (non-overlapping, left to right) in the path of the first line
 * that has one. Writes it to out and returns 0, or writes "" and returns -1. */
int pp_container_id_from_cgroup(const char *cgroup_text, char out[65]);

/* Container name of a process: "" when it is not in a container, the name is unknown, or the
 * process is gone. Cached per pid until pp_containers_new_session. The string stays valid until
 * the next pp_containers_new_session or pp_containers_free. */
const char *pp_container_name(pp_containers *c, int pid);

/* Name for a 64-hex container id ("" when unknown or the id is malformed); same caching and
 * lifetime as pp_container_name. */
const char *pp_container_name_by_id(pp_containers *c, const char *id);

/* Starts a new profiling session: forgets pids and unknown ids, allows one new listing. */
void pp_containers_new_session(pp_containers *c);

#endif
