#!/bin/sh
# check_lab_seam.sh NM CMAKE BUILD_DIR SHARED_LIB
#
# The ctest test "lab_seam": the production library carries the production API alone
# (docs/architecture.md, "The lab seam"). Fails when
#  - SHARED_LIB (the built libvhostlab.so) exports a lab symbol: vl_lab_control, the
#    guest-load hooks, or any fault-injection or allocation-count control;
#  - `cmake --install BUILD_DIR` into a fresh prefix installs a lab header (core/lab/ is never
#    installed) or a header naming a lab control, or installs a library defining a lab symbol.
# A lab symbol is one whose name holds "_lab_" (vl_lab_control, vl_lab_guest_load, ...),
# "fail_after", "fault_hook" or "alloc_count"; a lab header is named vl_lab*.
# The export list must also hold vl_pool_create, so an nm that prints nothing cannot pass.
set -u
if [ $# -ne 4 ]; then
    echo "usage: $0 NM CMAKE BUILD_DIR SHARED_LIB" >&2
    exit 2
fi
nm=$1 cmake=$2 build=$3 lib=$4
lab_re='_lab_|fail_after|fault_hook|alloc_count'
status=0

fail() {
    echo "FAIL: $*" >&2
    status=1
}

# defined_syms FILE: the global symbols FILE defines (dynamic ones for a shared object).
defined_syms() {
    case "$1" in
        *.a) "$nm" --defined-only -g "$1" ;;
        *) "$nm" -D --defined-only "$1" ;;
    esac
}

syms=$(defined_syms "$lib") || { echo "FAIL: $nm cannot read $lib" >&2; exit 1; }
echo "$syms" | grep -q ' vl_pool_create$' || fail "$lib does not export vl_pool_create"
bad=$(echo "$syms" | grep -Ei "$lab_re")
[ -z "$bad" ] || fail "$lib exports lab symbols:
$bad"

prefix=$(mktemp -d) || exit 2
trap 'rm -rf "$prefix"' EXIT
"$cmake" --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1 ||
    { cat "$prefix.log" >&2; rm -f "$prefix.log"; echo "FAIL: cmake --install" >&2; exit 1; }
rm -f "$prefix.log"
[ -d "$prefix/include/vhostlab" ] || fail "no headers installed in $prefix/include/vhostlab"
headers=$(find "$prefix/include" -type f -name 'vl_lab*')
[ -z "$headers" ] || fail "lab headers installed: $headers"
named=$(grep -rlEi "vl_lab|fail_after|fault_hook|alloc_count" "$prefix/include")
[ -z "$named" ] || fail "installed headers name lab controls: $named"
libs=$(find "$prefix" -type f \( -name 'libvhostlab*.a' -o -name 'libvhostlab*.so*' \))
[ -n "$libs" ] || fail "no library installed under $prefix"
for l in $libs; do
    bad=$(defined_syms "$l" | grep -Ei "$lab_re")
    [ -z "$bad" ] || fail "installed ${l#"$prefix"/} defines lab symbols:
$bad"
done

[ $status -eq 0 ] && echo "lab seam: $lib and the installed tree carry no lab symbol or header"
exit $status
