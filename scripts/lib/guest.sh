# QEMU guest helpers shared by scripts/guest-test and scripts/serve-guest-test
# (sourced, not run; source scripts/lib/apt.sh first). Every helper is
# idempotent and caches what it builds: a second run downloads and rebuilds
# nothing that has not changed.
#
#   guest_log MSG...                  "$guest_name: MSG" on stderr
#   guest_backports_kernel DIR        Debian's linux-image-amd64 from
#                                     bookworm-backports (6.12), downloaded
#                                     and unpacked (never installed) into
#                                     DIR/kernel-<package version>/, depmod'ed;
#                                     sets guest_kver, guest_kroot,
#                                     guest_vmlinuz
#   guest_base OUT INIT KROOT KVER MODULE...
#                                     the cached initramfs base OUT-<key>.cpio
#                                     (path on stdout): busybox and its applets,
#                                     the MODULEs and their dependencies
#                                     (decompressed, in load order, listed in
#                                     /lib/modules/order as "file.ko [args]",
#                                     args from guest_module_args[name]), INIT
#                                     as /init; KROOT / for the host's kernels
#   guest_stage_bin STAGE SRC [DEST]  copies SRC to STAGE/DEST (default: the
#                                     same path) with every library ldd lists
#   guest_pack STAGE OUT              STAGE as a reproducible newc cpio
#                                     archive (uncompressed)
#   guest_cached_bins OUT FILE...     OUT-<key>.cpio (path on stdout): the
#                                     FILEs at their own paths (a FILE given
#                                     as SRC=DEST: SRC at DEST) with their
#                                     libraries, rebuilt only when one of them
#                                     changes (size or mtime)
#   guest_f2fs_tools DIR              mkfs.f2fs and fsck.f2fs that format
#                                     zones of 4 GiB and more and count
#                                     zone capacity as Linux >= 6.4: Debian's
#                                     f2fs-tools source of the installed
#                                     version with guest_f2fs_patch, built
#                                     once into DIR/f2fs-tools-<version>-<key>/;
#                                     sets guest_f2fs_mkfs, guest_f2fs_fsck
#   guest_boot LOG LIMIT QEMU_ARG...  boots qemu-system-x86_64 (TCG, serial
#                                     console, no network) on the clock
#                                     $guest_clock (guest_clock_args; default
#                                     wall) for at most LIMIT seconds, console
#                                     in LOG and every "=== ZNSKIT" line and
#                                     every run's progress line ("[ 75 s]
#                                     [1/15] …") with the host seconds since
#                                     QEMU started in LOG.times; sets guest_qemu_rc,
#                                     guest_run_s, guest_boot_s (QEMU start to
#                                     the first marker)
#   guest_clock_args CLOCK            the QEMU arguments of a guest clock, one
#                                     a line: virtual (the instruction clock:
#                                     reruns give the same guest) or wall
#   guest_report LOG                  prints the marker blocks of LOG
#                                     ("=== ZNSKIT BEGIN name" ... "=== ZNSKIT
#                                     END name ...", "=== ZNSKIT RESULT ...");
#                                     returns 0 only for "RESULT PASS"
#   guest_part_times LOG              one line per part: host seconds it took
#   guest_artifact JSON KIND NAME     the executable(s) cargo's JSON messages
#                                     (--message-format=json…) in file JSON
#                                     list for target NAME of KIND (bin, test)
#
# The marker protocol is the guest's side: scripts/guest/run-tests and
# scripts/guest/serve-lib.sh print it.

guest_name=${guest_name:-guest}
declare -gA guest_module_args=()

guest_log() {
    echo "$guest_name: $*" >&2
}

guest_now() { # seconds since the epoch, with microseconds
    echo "${EPOCHREALTIME:-$(date +%s.%N)}"
}

guest_elapsed() { # START [END]: seconds between them, one decimal
    awk -v a="$1" -v b="${2:-$(guest_now)}" 'BEGIN { printf "%.1f", b - a }'
}

# ------------------------------------------------------------------ kernel
guest_backports_kernel() { # DIR
    local dir=$1 abi="" ver="" k
    mkdir -p "$dir"
    apt_add_backports || true
    guest_resolve_kernel() {
        abi=$(apt-cache depends -t bookworm-backports linux-image-amd64 2>/dev/null |
            awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
        ver=""
        [ -n "$abi" ] && ver=$(apt-cache show "$abi" 2>/dev/null | awk '$1 == "Version:" { print $2; exit }')
        [ -n "$ver" ]
    }
    if ! guest_resolve_kernel; then
        "${apt_as_root[@]}" apt-get update -qq || true
        guest_resolve_kernel || true
    fi
    if [ -n "$ver" ] && [ -e "$dir/kernel-$ver/.ready" ]; then
        guest_use_kernel "$dir/kernel-$ver"
        return 0
    fi
    if [ -z "$ver" ]; then
        # apt knows no backports kernel (no source, no metadata): a cached
        # one still does
        k=$(ls -d "$dir"/kernel-*/.ready 2>/dev/null | sort -V | tail -1)
        if [ -n "$k" ]; then
            guest_log "apt offers no bookworm-backports kernel; using the cached $(dirname "$k")"
            guest_use_kernel "$(dirname "$k")"
            return 0
        fi
        guest_log "cannot find Debian's linux-image-amd64 in bookworm-backports: this needs the"
        guest_log "bookworm-backports apt source (scripts/lib/apt.sh adds it) and its package lists"
        guest_log "(apt-get update, with access to deb.debian.org); ublk zoned needs Linux >= 6.6"
        return 1
    fi
    local t0 tmp
    t0=$(guest_now)
    tmp=$(mktemp -d "$dir/.kernel.XXXXXX")
    guest_log "downloading $abi $ver (not installed: unpacked into $dir/kernel-$ver)"
    if ! (cd "$tmp" && apt-get download -q "$abi=$ver" >download.log 2>&1); then
        # the mirror may have moved on to a newer backports kernel
        "${apt_as_root[@]}" apt-get update -qq || true
        if ! guest_resolve_kernel || ! (cd "$tmp" && apt-get download -q "$abi=$ver" >download.log 2>&1); then
            cat "$tmp/download.log" >&2 2>/dev/null || true
            rm -rf "$tmp"
            guest_log "cannot fetch the kernel package ${abi:-linux-image-*-amd64} ${ver} from bookworm-backports"
            guest_log "(apt-get download failed: network, proxy or mirror?); ublk zoned needs Linux >= 6.6"
            return 1
        fi
    fi
    dpkg-deb -x "$tmp"/*.deb "$tmp/root"
    k=$(ls "$tmp/root/lib/modules" 2>/dev/null | head -1)
    if [ -z "$k" ]; then # a usr-merged package (trixie's)
        k=$(ls "$tmp/root/usr/lib/modules" | head -1)
        ln -s usr/lib "$tmp/root/lib"
    fi
    depmod -b "$tmp/root" "$k"
    rm -f "$tmp"/*.deb "$tmp/download.log"
    rm -rf "$dir/kernel-$ver"
    mv "$tmp/root" "$dir/kernel-$ver"
    rmdir "$tmp"
    touch "$dir/kernel-$ver/.ready"
    # older cached kernels are of no use any more
    for k in "$dir"/kernel-*; do
        [ "$k" = "$dir/kernel-$ver" ] || rm -rf "$k"
    done
    guest_log "kernel $ver unpacked in $(guest_elapsed "$t0") s"
    guest_use_kernel "$dir/kernel-$ver"
}

guest_use_kernel() { # KROOT
    guest_kroot=$1
    guest_kver=$(ls "$guest_kroot/lib/modules" | head -1)
    guest_vmlinuz="$guest_kroot/boot/vmlinuz-$guest_kver"
    [ -r "$guest_vmlinuz" ] || { guest_log "no $guest_vmlinuz"; return 1; }
}

# --------------------------------------------------------------- initramfs
guest_modules() { # KROOT KVER MODULE...: "path name" of each module to load, in order, once
    local kroot=$1 kver=$2
    shift 2
    local m
    for m in "$@"; do
        modprobe -d "$kroot" -S "$kver" --show-depends "$m" || {
            guest_log "module $m not found for $kver"
            return 1
        }
    done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }'
}

guest_base() { # OUT INIT KROOT KVER MODULE...
    local out=$1 init=$2 kroot=$3 kver=$4
    shift 4
    local mods key base
    mods=$(guest_modules "$kroot" "$kver" "$@") || return 1
    key=$({
        echo "guest-base 2 $kver"
        dpkg-query -W -f='${Version}' busybox-static
        cat "$init"
        echo "$mods"
        for m in "$@"; do echo "$m ${guest_module_args[$m]:-}"; done
        # the modules' own identity (a kernel rebuilt under the same version)
        echo "$mods" | xargs -r stat -L -c '%s %Y'
    } | sha256sum | cut -c1-16)
    base="$out-$key.cpio"
    if [ ! -s "$base" ]; then
        guest_log "building the initramfs base ($base)"
        rm -f "$out"-*.cpio
        local stage ko name arg
        stage=$(mktemp -d)
        mkdir -p "$stage"/{bin,sbin,dev,proc,sys,tmp,lib/modules,etc}
        cp /bin/busybox "$stage/bin/busybox"
        ln -s busybox "$stage/bin/sh"
        cp "$init" "$stage/init"
        chmod +x "$stage/init"
        : >"$stage/lib/modules/order"
        for ko in $mods; do
            name=$(basename "$ko")
            case "$ko" in
                *.xz) xz -dc "$ko" >"$stage/lib/modules/${name%.xz}"; name=${name%.xz} ;;
                *.zst) zstd -qdc "$ko" >"$stage/lib/modules/${name%.zst}"; name=${name%.zst} ;;
                *) cp "$ko" "$stage/lib/modules/$name" ;;
            esac
            arg=${guest_module_args[${name%.ko}]:-}
            echo "$name${arg:+ $arg}" >>"$stage/lib/modules/order"
        done
        guest_pack "$stage" "$base"
        rm -rf "$stage"
    fi
    echo "$base"
}

guest_libs() { # BIN: the libraries ldd lists (the loader included)
    ldd "$1" 2>/dev/null | grep -o '/[^ ]*' || true
}

guest_stage_bin() { # STAGE SRC [DEST]
    local stage=$1 src=$2 dest=${3:-$2} lib
    mkdir -p "$stage$(dirname "$dest")"
    cp -L "$src" "$stage$dest"
    for lib in $(guest_libs "$src"); do
        [ -e "$stage$lib" ] && continue
        mkdir -p "$stage$(dirname "$lib")"
        cp -L "$lib" "$stage$lib"
    done
}

guest_pack() { # STAGE OUT
    # the same files give the same bytes (names sorted, one date, no inode
    # numbers): an initramfs whose size moved with the build's clock gave
    # the guest another memory size and another boot on the instruction
    # clock. Not compressed: gunzip cost the guest 2.4 G instructions at
    # every boot (the null_blk tests' smallest initramfs: 7.59 s of guest
    # time to the tests gzip'd, 5.23 s not; 20-30 s of TCG).
    find "$1" -exec touch -h -d @0 {} +
    (cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc --quiet --reproducible) >"$2.tmp"
    mv "$2.tmp" "$2"
}

guest_cached_bins() { # OUT FILE|SRC=DEST...
    local out=$1
    shift
    local f key files=()
    for f in "$@"; do
        [ -e "${f%%=*}" ] || { guest_log "missing ${f%%=*}"; return 1; }
        files+=("${f%%=*}" $(guest_libs "${f%%=*}"))
    done
    key=$({
        printf '%s\n' "$@"
        stat -L -c '%n %s %Y' "${files[@]}"
    } | sha256sum | cut -c1-16)
    if [ ! -s "$out-$key.cpio" ]; then
        guest_log "packing $# programs and their libraries ($out-$key.cpio)"
        rm -f "$out"-*.cpio
        local stage
        stage=$(mktemp -d)
        for f in "$@"; do
            case "$f" in
                *=*) guest_stage_bin "$stage" "${f%%=*}" "${f#*=}" ;;
                *) guest_stage_bin "$stage" "$f" ;;
            esac
        done
        guest_pack "$stage" "$out-$key.cpio"
        rm -rf "$stage"
    fi
    echo "$out-$key.cpio"
}

# --------------------------------------------------------------- f2fs-tools
# mkfs.f2fs keeps the size of an F2FS zone (one section: one device zone)
# in bytes in 32 bits (f2fs_prepare_super_block in mkfs/f2fs_format.c:
# zone_size_bytes; bookworm's f2fs-tools 1.15.0 and trixie's 1.16.0 alike).
# Zones of 4 GiB or more make it 0, and aligning segment 0 to a zone divides
# by it: SIGFPE ("trap divide error" in the kernel log), whatever the zone
# capacity or the metadata device. The patch computes it in 64 bits; for
# smaller zones the value, and so what mkfs writes, is unchanged.
#
# Zone capacity (second part): since Linux 6.4 ("f2fs: apply zone capacity
# to all zone type", 0b37ed21e336; the guest runs 6.12) every section of a
# zoned F2FS has the capacity of the sequential zones, also a section on a
# conventional zone or on the regular metadata device (fs/f2fs/segment.c:
# f2fs_usable_segs_in_sec returns CAP_SEGS_PER_SEC, f2fs_usable_blks_in_seg
# is 0 past CAP_BLKS_PER_SEC from the section's start, and init_free_segmap
# counts no such segment free), so the checkpoint's free_segment_count
# leaves those segments out. f2fs-tools 1.15 (2022) still gives such
# sections their whole size (fsck/mount.c: is_usable_seg;
# lib/libf2fs_zoned.c: f2fs_get_usable_segments), so once Linux has written
# a checkpoint fsck.f2fs fails "free segment_count matched with CP" by
# (zone size - capacity) / 2 MiB segments per regular section in the main
# area: 1942 for a 5 x ZN540 array (8 GiB zones of 4308 MiB) whose 24 GiB
# metadata device leaves one 8 GiB section in the main area. The patch makes
# both use the kernel's rule (f2fs_section_capacity: the sequential zones'
# capacity, 0 when it is the zone size, which leaves everything as before):
# fsck's count of usable and free segments, and the segment count mkfs
# bases free_segment_count, over-provisioning and user_block_count on.
guest_f2fs_patch() {
    cat <<'EOF'
--- a/mkfs/f2fs_format.c
+++ b/mkfs/f2fs_format.c
@@ -212,7 +212,8 @@
 	uint32_t blk_size_bytes;
 	uint32_t log_sectorsize, log_sectors_per_block;
 	uint32_t log_blocksize, log_blks_per_seg;
-	uint32_t segment_size_bytes, zone_size_bytes;
+	uint32_t segment_size_bytes;
+	uint64_t zone_size_bytes;
 	uint32_t sit_segments, nat_segments;
 	uint32_t blocks_for_sit, blocks_for_nat, blocks_for_ssa;
 	uint32_t total_valid_blks_available;
@@ -245,7 +246,7 @@
 	blk_size_bytes = 1 << log_blocksize;
 	segment_size_bytes = blk_size_bytes * c.blks_per_seg;
 	zone_size_bytes =
-		blk_size_bytes * c.secs_per_zone *
+		(uint64_t)blk_size_bytes * c.secs_per_zone *
 		c.segs_per_sec * c.blks_per_seg;
 
 	set_sb(checksum_offset, 0);
--- a/fsck/mount.c
+++ b/fsck/mount.c
@@ -66,6 +66,11 @@
 	unsigned int sec_off = SM_I(sbi)->main_blkaddr >>
 						log_base_2(blocks_per_sec);
 
+	/* as Linux >= 6.4 counts: every section has the zones' capacity */
+	if (f2fs_section_capacity())
+		return seg_start < START_BLOCK(sbi, GET_SEG_FROM_SEC(sbi, secno)) +
+					f2fs_section_capacity();
+
 	if (zone_idx < c.devices[dev_idx].nr_rnd_zones)
 		return true;
 
--- a/include/f2fs_fs.h
+++ b/include/f2fs_fs.h
@@ -1563,6 +1563,7 @@
 int f2fs_reset_zone(int, void *);
 extern int f2fs_reset_zones(int);
 extern uint32_t f2fs_get_usable_segments(struct f2fs_super_block *sb);
+extern size_t f2fs_section_capacity(void);
 
 #define SIZE_ALIGN(val, size)	(((val) + (size) - 1) / (size))
 #define SEG_ALIGN(blks)		SIZE_ALIGN(blks, c.blks_per_seg)
--- a/lib/libf2fs_zoned.c
+++ b/lib/libf2fs_zoned.c
@@ -499,6 +499,37 @@
 	return ret;
 }
 
+/*
+ * Linux 6.4 and later ("f2fs: apply zone capacity to all zone type") give
+ * every section of a zoned volume the capacity of its sequential zones,
+ * conventional zones and regular devices included: the segments past it
+ * are neither usable nor free. That capacity in blocks, 0 for full zones.
+ */
+size_t f2fs_section_capacity(void)
+{
+	static size_t cap;
+	static int known;
+	unsigned int j;
+	int i;
+
+	if (known)
+		return cap;
+	for (i = 0; i < c.ndevs; i++) {
+		struct device_info *dev = c.devices + i;
+
+		if (dev->zoned_model != F2FS_ZONED_HM || !dev->zone_cap_blocks)
+			continue;
+		known = 1;
+		for (j = 0; j < dev->nr_zones; j++) {
+			if (dev->zone_cap_blocks[j] < dev->zone_blocks) {
+				cap = dev->zone_cap_blocks[j];
+				return cap;
+			}
+		}
+	}
+	return cap;
+}
+
 uint32_t f2fs_get_usable_segments(struct f2fs_super_block *sb)
 {
 #ifdef HAVE_BLK_ZONE_REP_V2
@@ -508,6 +539,11 @@
 	if (c.func == RESIZE)
 		return get_sb(segment_count_main);
 
+	if (f2fs_section_capacity())
+		return get_sb(section_count) *
+			SIZE_ALIGN(f2fs_section_capacity(),
+				1 << get_sb(log_blocks_per_seg));
+
 	for (i = 0; i < c.ndevs; i++) {
 		if (c.devices[i].zoned_model != F2FS_ZONED_HM) {
 			usable_segs += c.devices[i].total_segments;
EOF
}

guest_f2fs_tools() { # DIR
    local dir=$1 ver key out tmp src log t0 f flags
    ver=$(dpkg-query -W -f='${Version}' f2fs-tools 2>/dev/null) || {
        guest_log "f2fs-tools is not installed (its version is the source to build)"
        return 1
    }
    key=$({
        echo "guest-f2fs 2 $ver"
        guest_f2fs_patch
    } | sha256sum | cut -c1-12)
    out="$dir/f2fs-tools-$ver-$key"
    guest_f2fs_mkfs="$out/mkfs.f2fs"
    guest_f2fs_fsck="$out/fsck.f2fs"
    [ -e "$out/.ready" ] && return 0
    t0=$(guest_now)
    mkdir -p "$dir"
    log="$dir/f2fs-tools-build.log"
    guest_log "building f2fs-tools $ver from Debian's source with the zone-size and zone-capacity patch (log: $log)"
    apt_install dpkg-dev gcc make patch autoconf automake libtool pkg-config \
        uuid-dev libblkid-dev libselinux1-dev
    apt_add_deb_src
    tmp=$(mktemp -d "$dir/.f2fs.XXXXXX")
    if ! (cd "$tmp" && apt-get source -q "f2fs-tools=$ver") >"$log" 2>&1; then
        # stale source lists?
        "${apt_as_root[@]}" apt-get update -qq || true
        rm -rf "${tmp:?}"/*
        if ! (cd "$tmp" && apt-get source -q "f2fs-tools=$ver") >"$log" 2>&1; then
            tail -20 "$log" >&2
            rm -rf "$tmp"
            guest_log "cannot fetch the source of f2fs-tools $ver (apt-get source: a deb-src entry, the network?)"
            return 1
        fi
    fi
    src=$(ls -d "$tmp"/f2fs-tools-*/ | head -1)
    # Debian's own build (debian/rules): hardening=+all, --disable-shared;
    # stripped of the build ID too, which the random build directory made
    # differ from build to build: two guest directories with their own
    # builds (nothing else differed: 40 bytes of the initramfs) gave
    # application results 0.1-1.9 % apart on the instruction clock, where
    # two guests with the same build gave the same bytes (docs/apps.md)
    # and without compression support, as Debian's (its build has neither
    # liblz4-dev nor liblzo2-dev; configure takes them when they are
    # installed, and f2fs-tools 1.15's lz4 code does not build with
    # bookworm's lz4 1.9.4): configure's cached answers say they are absent
    flags=(ac_cv_lib_lz4_main=no ac_cv_lib_lzo2_main=no)
    for f in CFLAGS CPPFLAGS LDFLAGS; do
        flags+=("$f=$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$f")")
    done
    if ! { guest_f2fs_patch | patch -d "$src" -p1 --forward &&
        (cd "$src" && ./autogen.sh && ./configure --disable-shared "${flags[@]}" &&
            make -j"$(nproc)" -C lib && make -j"$(nproc)" -C mkfs && make -j"$(nproc)" -C fsck) &&
        mkdir "$tmp/out" &&
        cp "$src/mkfs/mkfs.f2fs" "$src/fsck/fsck.f2fs" "$tmp/out/" &&
        strip --remove-section=.note.gnu.build-id "$tmp/out/mkfs.f2fs" "$tmp/out/fsck.f2fs" &&
        "$tmp/out/mkfs.f2fs" -V; } >>"$log" 2>&1; then
        tail -30 "$log" >&2
        rm -rf "$tmp"
        guest_log "building f2fs-tools $ver failed (log: $log)"
        return 1
    fi
    # older builds are of no use any more
    rm -rf "$dir"/f2fs-tools-*/
    mv "$tmp/out" "$out"
    rm -rf "$tmp"
    touch "$out/.ready"
    guest_log "f2fs-tools $ver built in $(guest_elapsed "$t0") s"
}

# -------------------------------------------------------------------- boot
guest_watch() { # T0 TIMES: copies stdin to stdout; marker and run lines with host seconds to TIMES
    local t0=$1 times=$2 line
    # a run's progress line from `zns repro --eta always`: "[  75 s] [1/15] …"
    local run_line='^\[ *[0-9]+ s\] \[[0-9]+/[0-9]+\] '
    : >"$times"
    while IFS= read -r line || [ -n "$line" ]; do
        printf '%s\n' "$line"
        case "$line" in
            *"=== ZNSKIT"*) printf '%s %s\n' "$(guest_elapsed "$t0")" "=== ZNSKIT${line#*=== ZNSKIT}" | tr -d '\r' >>"$times" ;;
            *)
                if [[ $line =~ $run_line ]]; then
                    printf '%s %s\n' "$(guest_elapsed "$t0")" "$line" | tr -d '\r' >>"$times"
                fi
                ;;
        esac
    done
}

# The guest's clock (docs/apps.md, "The guest in virtual time").
#
# virtual: QEMU's instruction clock. `-icount shift=0` advances the guest's
# clocks (TSC, HPET, APIC and PIT timers, the RTC with clock=vm) by 1 ns per
# executed guest instruction, whatever the host's speed or load;
# `sleep=off` jumps them to the next timer when the CPU idles, so waiting
# for an emulated device costs no host time; `align=off` never slows the
# guest to the host's clock. One vCPU: icount has one instruction counter,
# which the vCPUs of round-robin TCG take in turn, so a second vCPU adds no
# CPU time in the guest (two busy vCPUs each run at half the rate:
# measured, docs/apps.md) and only brings spinning on a lock whose holder
# waits for its turn. What else made reruns differ, and is fixed here or
# in the harness:
# - the RTC: by default the host's date at boot (CLOCK_REALTIME, file
#   times); a fixed date, advancing with the instruction clock.
# - the host's randomness in the guest kernel's entropy pool (ASLR, hash
#   seeds, /dev/urandom): RDRAND/RDSEED off, and `-seed 1` for QEMU's own
#   generator. Measured: `-seed 2` gives the same boot_id and the same
#   application figures as `-seed 1`, so the pool is the (instruction)
#   clock's alone, and a seed is no knob to perturb a run with (docs/apps.md,
#   "The guest's bytes").
# - the initramfs's bytes (guest_pack makes them reproducible).
# Not for determinism but for the clock's meaning: no ERMS/FSRM. TCG
# counts every iteration of a `rep movsb` as an instruction, so with them
# the kernel's and glibc's copies cost one guest ns per byte (a served
# 128 KiB write: 567 k instructions in the server); without them they copy
# 8 or 32 bytes an instruction (216 k), nearer a real CPU's cost.
# - input read after boot through 9p (its requests complete on host
#   threads at host-timed instructions): the harness puts what the guest
#   reads into the initramfs and writes /out back through 9p only after
#   the last measurement (ZNSKIT_GUEST_SHARE in scripts/serve-guest-test).
# - a race in QEMU between its two threads, seen only on a loaded host
#   (CI's two guests side by side once; two guests beside three busy
#   loops): the vCPU thread marks the CPU halted inside the translated
#   code, without a lock, and counts the instructions it ran into the
#   clock only after leaving it; a main-loop thread that looks in between
#   sees an idle CPU and a clock up to 65 535 instructions behind, and
#   `sleep=off` jumps it to the next timer from there: that timer then
#   fires late by those instructions, and the run goes another way (read
#   in QEMU 10's icount code, not instrumented). `rr=record` (QEMU's
#   record/replay, recording to /dev/null) makes the two threads take
#   turns under the replay lock, which the vCPU thread holds from
#   budgeting its instructions to counting them: with it, four runs
#   beside three busy loops were the same bytes, where without it two
#   were not (docs/apps.md, "The guest in virtual time"). The record
#   itself is not kept: the lock is what the harness needs, not a replay.
# wall: the host's clock (the guest's CPU as fast as TCG runs it, two
# vCPUs in two host threads); for a quick functional check.
guest_clock_args() { # CLOCK
    case "$1" in
        virtual)
            printf '%s\n' -icount shift=0,sleep=off,align=off,rr=record,rrfile=/dev/null -smp 1 \
                -rtc base=2026-01-01T00:00:00,clock=vm -cpu max,-rdrand,-rdseed,-erms,-fsrm \
                -seed 1
            ;;
        wall) printf '%s\n' -smp 2 -cpu max ;;
        *)
            guest_log "unknown guest clock '$1' (ZNSKIT_GUEST_CLOCK: virtual or wall)"
            return 2
            ;;
    esac
}

guest_boot() { # LOG LIMIT QEMU_ARG...
    local log=$1 limit=$2
    shift 2
    local t0 errexit=0 clock_args
    clock_args=$(guest_clock_args "${guest_clock:-wall}") || return 2
    local -a clock=()
    mapfile -t clock <<<"$clock_args"
    [[ $- == *e* ]] && errexit=1
    t0=$(guest_now)
    set +e
    timeout "$limit" qemu-system-x86_64 \
        -machine q35 -accel tcg "${clock[@]}" \
        -nographic -no-reboot -nic none -vga none \
        "$@" </dev/null 2>&1 | guest_watch "$t0" "$log.times" >"$log"
    guest_qemu_rc=${PIPESTATUS[0]}
    [ $errexit -eq 1 ] && set -e
    guest_run_s=$(guest_elapsed "$t0")
    guest_boot_s=$(awk 'NR == 1 { print $1 }' "$log.times")
    guest_boot_s=${guest_boot_s:-?}
    return 0
}

guest_report() { # LOG
    sed -n -e '/^=== ZNSKIT BEGIN/,/^=== ZNSKIT END/p' -e '/^=== ZNSKIT RESULT/p' "$1" | tr -d '\r'
    grep -q '^=== ZNSKIT RESULT PASS' "$1" && return 0
    if ! grep -q '^=== ZNSKIT RESULT' "$1"; then
        guest_log "the guest did not report a result; last console lines:"
        tail -40 "$1" >&2
    fi
    return 1
}

guest_part_times() { # LOG: "name seconds" for each BEGIN/END pair, host clock
    awk '$2 == "===" && $4 == "BEGIN" { start[$5] = $1 }
         $2 == "===" && $4 == "END" && ($5 in start) { printf "  %-16s %6.1f s\n", $5, $1 - start[$5] }' "$1.times"
}

guest_artifact() { # JSON KIND NAME
    python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
path, kind, name = sys.argv[1:]
for line in open(path):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and m["target"]["name"] == name and kind in m["target"]["kind"] \
            and (kind == "test" or not m["profile"]["test"]):
        # (a bin target also builds its unit-test harness: skip that one)
        print(m["executable"])
EOF
}
