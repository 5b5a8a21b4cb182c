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
#   contains TEXT PART    whether TEXT contains PART
#   serve ARG...          `zns serve --json ARG...` in the background, once its
#                         devices exist (pid in /tmp/served.pid, JSON in
#                         /tmp/served.json); a server left running is stopped
#   path N                the Nth served device's path (0-based)
#   stop                  SIGTERM to the server: it must exit 0 and remove
#                         its devices
#   cleanup               stops a server a failed part left running
#   guest_share_back      copies /out back to the host's ZNSKIT_GUEST_SHARE
#                         directory (9p tag znskit-out): call it once, after
#                         the last measurement (a 9p request completes at a
#                         host-timed instruction)
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

contains() { # TEXT PART
    case "$1" in *"$2"*) return 0 ;; esac
    return 1
}

# cleanup: a server a failed part left running is stopped (it is not a
# child of this part's shell: poll for its end)
cleanup() {
    if [ -s /tmp/served.pid ]; then
        pid=$(cat /tmp/served.pid)
        kill -TERM "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do
            sleep 0.1
            i=$((i + 1))
        done
    fi
    rm -f /tmp/served.pid
}

# serve TARGET... : starts `zns serve --json` in the background, waits for
# its JSON (device paths in /tmp/served.json); the pid in /tmp/served.pid
serve() {
    cleanup
    rm -f /tmp/served.json
    zns serve --json "$@" >/tmp/served.json 2>/tmp/served.log &
    echo $! >/tmp/served.pid
    i=0
    while [ ! -s /tmp/served.json ] && [ $i -lt 600 ]; do
        if ! kill -0 "$(cat /tmp/served.pid)" 2>/dev/null; then
            cat /tmp/served.log
            return 1
        fi
        sleep 0.1
        i=$((i + 1))
    done
    cat /tmp/served.log
    cat /tmp/served.json
}

# path N: the Nth served device's path (0-based)
path() {
    tr ',' '\n' </tmp/served.json | sed -n 's/.*"path":"\([^"]*\)".*/\1/p' | sed -n "$(($1 + 1))p"
}

# stop: SIGTERM, and the server must remove its devices and exit 0
stop() {
    pid=$(cat /tmp/served.pid)
    paths=$(tr ',' '\n' </tmp/served.json | sed -n 's/.*"path":"\([^"]*\)".*/\1/p')
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    rm -f /tmp/served.pid
    cat /tmp/served.log
    check "zns serve exited 0 on SIGTERM" test $rc -eq 0
    for p in $paths; do
        check "$p is gone" test ! -e "$p"
    done
}

guest_share_back() {
    mkdir -p /mnt/share
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576 znskit-out /mnt/share ||
        { echo "guest_share_back: cannot mount the host's directory (9p znskit-out)"; return 1; }
    _rc=0
    cp -a /out/. /mnt/share/ || _rc=$?
    umount /mnt/share || _rc=$?
    return $_rc
}
