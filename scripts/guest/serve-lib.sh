# Sourced by the scripts that run in the ublk guest (scripts/serve-guest-test
# puts it at /znskit/lib.sh): the marker protocol and null_blk helpers.
#
#   part NAME CMD...      runs CMD (a function or program) in a subshell with
#                         set -e, its output between "=== ZNSKIT BEGIN NAME"
#                         and "=== ZNSKIT END NAME rc=N S s"; a failure is
#                         remembered
#   result                prints "=== ZNSKIT RESULT PASS" or "… FAIL: names"
#                         (and the kernel log's tail when something failed)
#   nullb_make NAME K=V…  a null_blk device through configfs (memory_backed,
#                         blocksize, size in MiB, zoned, zone_size and
#                         zone_capacity in MiB, zone_nr_conv, zone_max_open,
#                         zone_max_active, …); prints its /dev path
#   nullb_remove NAME
#   check DESCRIPTION CMD...  runs CMD, prints "ok: …" or "FAILED: …" and
#                         returns its status (so set -e stops the part)
failed=""

uptime_s() {
    cut -d' ' -f1 /proc/uptime
}

part() { # NAME CMD...
    _name=$1
    shift
    echo "=== ZNSKIT BEGIN $_name"
    _t0=$(uptime_s)
    (set -e -o pipefail; "$@") 2>&1
    _rc=$?
    _t1=$(uptime_s)
    echo "=== ZNSKIT END $_name rc=$_rc $(awk -v a="$_t0" -v b="$_t1" 'BEGIN { printf "%.1f", b - a }') s (${_t0}s -> ${_t1}s guest uptime)"
    [ $_rc -eq 0 ] || failed="$failed $_name"
    return 0
}

result() {
    if [ -z "$failed" ]; then
        echo "=== ZNSKIT RESULT PASS"
    else
        echo "=== ZNSKIT BEGIN dmesg"
        dmesg | tail -60
        echo "=== ZNSKIT END dmesg rc=0"
        echo "=== ZNSKIT RESULT FAIL:$failed"
    fi
}

check() { # DESCRIPTION CMD...
    _what=$1
    shift
    if "$@"; then
        echo "ok: $_what"
    else
        _rc=$?
        echo "FAILED: $_what (rc=$_rc)"
        return $_rc
    fi
}

nullb_make() { # NAME KEY=VALUE...
    _d=/sys/kernel/config/nullb/$1
    shift
    mkdir "$_d" || return 1
    for _kv in "$@"; do
        echo "${_kv#*=}" >"$_d/${_kv%%=*}" || { echo "nullb: cannot set ${_kv%%=*}" >&2; return 1; }
    done
    echo 1 >"$_d/power" || return 1
    # Linux >= 6.? names the disk after the configfs directory, older ones nullbN
    if [ -b "/dev/$(basename "$_d")" ]; then
        echo "/dev/$(basename "$_d")"
    else
        echo "/dev/nullb$(cat "$_d/index")"
    fi
}

nullb_remove() { # NAME
    echo 0 >"/sys/kernel/config/nullb/$1/power" 2>/dev/null
    rmdir "/sys/kernel/config/nullb/$1"
}
