#!/bin/bash
# Prints, per Ruby version, the offsets that runtimes/ruby/layout.c needs (x86_64), measured
# with Rust's offset_of! on the bindgen translation of that version's headers (vm_core.h,
# iseq.h, ractor_core.h, thread_pthread.h, rstring.h) in the rbspy-ruby-structs crate that
# `make deps` fetches with rbspy (docs/ruby.md, "Versions and layouts"). A maintainer's tool,
# not run by the tests. Usage: ruby_layout_offsets.sh [crate src dir] [version regex]
set -euo pipefail
SRC=${1:-$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/rbspy-ruby-structs-*/src 2>/dev/null | tail -1)}
RE=${2:-'2_[67]_[0-9]+|3_[0-4]_[0-9]+'}
[ -d "$SRC" ] || { echo "rbspy-ruby-structs not found (run make deps, or give its src dir)" >&2; exit 1; }
command -v rustc >/dev/null || { echo "rustc not found (install rustc)" >&2; exit 1; }
VERS=$(ls "$SRC" | sed -En "s/^ruby_(${RE})\.rs$/\1/p" | sort -t_ -k1,1n -k2,2n -k3,3n)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
{
    echo '#![allow(warnings)]'
    echo 'use std::mem::{offset_of, size_of};'
    for v in $VERS; do echo "#[path = \"$SRC/ruby_$v.rs\"] mod r$v;"; done
    cat <<'R'
macro_rules! common { ($m:ident, $name:expr) => {{ use $m::*;
    print!("{} ec_vm_stack={} ec_vm_stack_size={} ec_cfp={} ec_thread={} th_ec={} cfp_size={} \
cfp_pc={} cfp_iseq={} cfp_ep={} iseq_body={} body_iseq_size={} body_iseq_encoded={} \
body_pathobj={} body_label={} body_first_lineno={} first_lineno_bytes={} body_insns_body={} \
body_insns_positions={} body_insns_size={} body_succ={} insn_entry_size={} insn_line_no={} \
rstring_as={} th_root_fiber={} ",
        $name,
        offset_of!(rb_execution_context_struct, vm_stack),
        offset_of!(rb_execution_context_struct, vm_stack_size),
        offset_of!(rb_execution_context_struct, cfp),
        offset_of!(rb_execution_context_struct, thread_ptr),
        offset_of!(rb_thread_struct, ec),
        size_of::<rb_control_frame_struct>(),
        offset_of!(rb_control_frame_struct, pc),
        offset_of!(rb_control_frame_struct, iseq),
        offset_of!(rb_control_frame_struct, ep),
        offset_of!(rb_iseq_struct, body),
        offset_of!(rb_iseq_constant_body, iseq_size),
        offset_of!(rb_iseq_constant_body, iseq_encoded),
        offset_of!(rb_iseq_constant_body, location.pathobj),
        offset_of!(rb_iseq_constant_body, location.label),
        offset_of!(rb_iseq_constant_body, location.first_lineno),
        offset_of!(rb_iseq_location_struct, node_id) - offset_of!(rb_iseq_location_struct, first_lineno),
        offset_of!(rb_iseq_constant_body, insns_info.body),
        offset_of!(rb_iseq_constant_body, insns_info.positions),
        offset_of!(rb_iseq_constant_body, insns_info.size),
        offset_of!(rb_iseq_constant_body, insns_info.succ_index_table),
        size_of::<iseq_insn_info_entry>(),
        offset_of!(iseq_insn_info_entry, line_no),
        offset_of!(RString, as_),
        offset_of!(rb_thread_struct, root_fiber));
}}; }
macro_rules! v2 { ($m:ident, $name:expr) => {{ use $m::*; common!($m, $name);
    println!("vm_main_thread={} th_thread_id={}",
        offset_of!(rb_vm_struct, main_thread), offset_of!(rb_thread_struct, thread_id)); }}; }
macro_rules! v30 { ($m:ident, $name:expr) => {{ use $m::*; common!($m, $name);
    println!("vm_main_ractor={} vm_main_thread={} root_ec={} th_thread_id={}",
        offset_of!(rb_vm_struct, ractor.main_ractor), offset_of!(rb_vm_struct, ractor.main_thread),
        offset_of!(rb_ractor_struct, threads.running_ec), offset_of!(rb_thread_struct, thread_id)); }}; }
macro_rules! v32 { ($m:ident, $name:expr) => {{ use $m::*; common!($m, $name);
    println!("vm_main_ractor={} vm_main_thread={} root_ec={} th_nt={} nt_thread_id={}",
        offset_of!(rb_vm_struct, ractor.main_ractor), offset_of!(rb_vm_struct, ractor.main_thread),
        offset_of!(rb_ractor_struct, threads.running_ec), offset_of!(rb_thread_struct, nt),
        offset_of!(rb_native_thread, thread_id)); }}; }
fn main() {
R
    for v in $VERS; do
        case $v in 2_*) m=v2 ;; 3_0_* | 3_1_*) m=v30 ;; *) m=v32 ;; esac
        echo "    $m!(r$v, \"$v\");"
    done
    echo "}"
} >"$TMP/offsets.rs"
rustc --edition 2021 -C debuginfo=0 "$TMP/offsets.rs" -o "$TMP/offsets" 2>"$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
"$TMP/offsets"
