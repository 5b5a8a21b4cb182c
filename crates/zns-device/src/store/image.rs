//! The persistent device image: one file holding the profile, the device's
//! metadata (zone table) and the data of one or more namespaces, that survives
//! process restart and `kill -9`, detects corruption, and never hands back
//! bytes it cannot vouch for. The on-disk format is specified in
//! `docs/image-format.md`; this header states the invariants the code keeps.
//!
//! # Layout (all integers little endian, regions aligned to 1 MiB)
//! ```text
//! 0       header, primary copy  (magic, version, CRC32C, geometry, profile TOML)
//! 1 MiB   header, backup copy   (identical but for copy_index and its CRC)
//! 2 MiB   metadata slot A, then slot B (each: 64-byte slot header + blob)
//!         per namespace: block checksum table (u32 per block, 0 = unwritten)
//!         per namespace: data region (lba_count x lba_bytes, sparse)
//! ```
//!
//! # Invariants
//! - The header never changes after `create`. `open` accepts a file only if
//!   both header copies pass their CRC, agree, and describe exactly the layout
//!   `create` would compute, and the file length equals `file_bytes`;
//!   otherwise it returns [`StoreError::Corrupt`] naming the field.
//! - A block's checksum entry is 0 (never written / deallocated: reads zeros,
//!   its data bytes are ignored) or `crc32c(ns_index ‖ lba ‖ data) | 1`.
//!   A read whose data does not match a non-zero entry fails with
//!   [`StoreError::BadBlock`]; including the LBA catches misdirected writes.
//! - At any time at least one metadata slot is valid (magic, slot CRC, blob
//!   CRC); the valid slot with the highest sequence is current, and
//!   `save_metadata` only ever overwrites the other slot.
//!
//! # Crash ordering
//! `write` puts the data, then the checksum entries (so a `kill -9` between the
//! two leaves a never-written block reading zeros). `sync` is one fdatasync of
//! the file. `save_metadata` is: fdatasync (all data and checksums written so
//! far are durable) → write the non-current slot → fdatasync. So a durable
//! metadata slot never describes data that is not durable, and a torn slot
//! fails its CRC and the previous one is used. A write that was never synced
//! may, after power loss, read as its old contents, zeros, or `BadBlock`;
//! after `kill -9` alone (page cache intact) every completed call survives.

use std::cell::Cell;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::{DataStore, FailedStore, Geometry, StoreError, StoreKind};

/// First 8 bytes of every image.
pub const MAGIC: [u8; 8] = *b"ZNSKIMG\0";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes reserved for each header copy.
pub const HEADER_COPY_BYTES: u64 = 1 << 20;
/// Alignment of every region of the file, in bytes.
pub const REGION_ALIGN_BYTES: u64 = 1 << 20;
/// Most namespaces one image holds.
pub const NAMESPACE_COUNT_MAX: u32 = 1024;
/// Largest metadata slot, in bytes.
pub const METADATA_SLOT_BYTES_MAX: u64 = 1 << 30;
/// First 8 bytes of a metadata slot.
pub const METADATA_MAGIC: [u8; 8] = *b"ZNSKMETA";

const HEADER_FIXED_BYTES: usize = 128;
const NAMESPACE_ENTRY_BYTES: usize = 64;
const SLOT_HEADER_BYTES: usize = 64;
const CHECKSUM_ENTRY_BYTES: u64 = 4;
/// Bytes of the header covered by `header_crc32c` but excluded from it (the field itself).
const HEADER_CRC_FIELD: std::ops::Range<usize> = 12..16;
const HEADER_COPY_INDEX_FIELD: std::ops::Range<usize> = 20..24;
/// Chunk used to write zeros where holes cannot be punched, in bytes.
const ZERO_CHUNK_BYTES: usize = 64 * 1024;

/// Fixed header fields: (offset, length, name).
const HEADER_FIELDS: &[(usize, usize, &str)] = &[
    (0, 8, "magic"),
    (8, 4, "format_version"),
    (12, 4, "header_crc32c"),
    (16, 4, "header_bytes"),
    (20, 4, "copy_index"),
    (24, 8, "header_copy_bytes"),
    (32, 8, "metadata_offset"),
    (40, 8, "metadata_slot_bytes"),
    (48, 8, "file_bytes"),
    (56, 4, "namespace_count"),
    (60, 4, "profile_toml_bytes"),
    (64, 64, "reserved"),
];

/// Namespace table entry fields: (offset within the entry, length, name).
const NAMESPACE_FIELDS: &[(usize, usize, &str)] = &[
    (0, 4, "lba_bytes"),
    (4, 4, "reserved"),
    (8, 8, "lba_count"),
    (16, 8, "checksum_table_offset"),
    (24, 8, "checksum_table_bytes"),
    (32, 8, "data_offset"),
    (40, 8, "data_bytes"),
    (48, 16, "reserved"),
];

/// When the image calls fdatasync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncPolicy {
    /// `sync` and `save_metadata` call fdatasync: synced writes survive power
    /// loss and OS crashes.
    #[default]
    Durable,
    /// No fdatasync: every completed call survives the process being killed
    /// (the kernel's page cache keeps it), but not power loss or an OS crash.
    /// For tests and throughput runs.
    PageCacheOnly,
}

/// Options of [`PersistentImage::create_with`] / [`PersistentImage::open_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImageOptions {
    /// Capacity of each metadata slot, in bytes, including its 64-byte slot
    /// header (create only; rounded up to 1 MiB, at most 1 GiB). `None`: 1 MiB
    /// per 8 GiB of data, at least 1 MiB and at most 1 GiB.
    pub metadata_slot_bytes: Option<u64>,
    /// When to call fdatasync.
    pub sync_policy: SyncPolicy,
}

/// Where one namespace lives in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NamespaceLayout {
    geometry: Geometry,
    checksum_table_offset: u64,
    checksum_table_bytes: u64,
    data_offset: u64,
    data_bytes: u64,
}

/// Where everything lives in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    metadata_offset: u64,
    metadata_slot_bytes: u64,
    namespaces: Vec<NamespaceLayout>,
    file_bytes: u64,
}

fn round_up(value: u64, align: u64) -> Option<u64> {
    value.checked_add(align - 1).map(|v| v / align * align)
}

impl Layout {
    /// The layout `create` uses for these namespaces (also the reference `open`
    /// checks a header against).
    fn compute(namespaces: &[Geometry], metadata_slot_bytes: u64) -> Option<Layout> {
        let metadata_offset = 2 * HEADER_COPY_BYTES;
        let mut at = metadata_offset.checked_add(metadata_slot_bytes.checked_mul(2)?)?;
        let mut layouts = Vec::with_capacity(namespaces.len());
        for geometry in namespaces {
            let checksum_table_bytes = geometry.lba_count.checked_mul(CHECKSUM_ENTRY_BYTES)?;
            layouts.push(NamespaceLayout {
                geometry: *geometry,
                checksum_table_offset: at,
                checksum_table_bytes,
                data_offset: 0,
                data_bytes: geometry.bytes(),
            });
            at = at.checked_add(round_up(checksum_table_bytes, REGION_ALIGN_BYTES)?)?;
        }
        for ns in &mut layouts {
            ns.data_offset = at;
            at = at.checked_add(round_up(ns.data_bytes, REGION_ALIGN_BYTES)?)?;
        }
        if at > i64::MAX as u64 {
            return None;
        }
        Some(Layout {
            metadata_offset,
            metadata_slot_bytes,
            namespaces: layouts,
            file_bytes: at,
        })
    }

    fn slot_offset(&self, slot: usize) -> u64 {
        self.metadata_offset + slot as u64 * self.metadata_slot_bytes
    }
}

fn default_metadata_slot_bytes(namespaces: &[Geometry]) -> u64 {
    let data_bytes: u64 = namespaces
        .iter()
        .map(|g| g.bytes())
        .fold(0, u64::saturating_add);
    let wanted = round_up(data_bytes / 8192, REGION_ALIGN_BYTES).unwrap_or(u64::MAX);
    wanted.clamp(REGION_ALIGN_BYTES, 1 << 30)
}

fn put_u32(buf: &mut [u8], at: usize, value: u32) {
    buf[at..at + 4].copy_from_slice(&value.to_le_bytes());
}
fn put_u64(buf: &mut [u8], at: usize, value: u64) {
    buf[at..at + 8].copy_from_slice(&value.to_le_bytes());
}
/// Reads a little-endian integer of up to 8 bytes; bytes beyond `buf` read as 0.
fn get_uint(buf: &[u8], at: usize, len: usize) -> u64 {
    let mut bytes = [0u8; 8];
    for (i, b) in bytes.iter_mut().enumerate().take(len.min(8)) {
        *b = buf.get(at + i).copied().unwrap_or(0);
    }
    u64::from_le_bytes(bytes)
}
fn get_u32(buf: &[u8], at: usize) -> u32 {
    get_uint(buf, at, 4) as u32
}
fn get_u64(buf: &[u8], at: usize) -> u64 {
    get_uint(buf, at, 8)
}

/// CRC32C of a header copy, with the CRC field taken as zero.
fn header_crc(header: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&header[..HEADER_CRC_FIELD.start]);
    let crc = crc32c::crc32c_append(crc, &[0u8; 4]);
    crc32c::crc32c_append(crc, &header[HEADER_CRC_FIELD.end..])
}

/// Encodes one header copy (`copy_index` 0 = primary, 1 = backup).
fn encode_header(layout: &Layout, profile_toml: &str, copy_index: u32) -> Vec<u8> {
    let ns_count = layout.namespaces.len();
    let header_bytes = HEADER_FIXED_BYTES + ns_count * NAMESPACE_ENTRY_BYTES + profile_toml.len();
    let mut h = vec![0u8; header_bytes];
    h[..8].copy_from_slice(&MAGIC);
    put_u32(&mut h, 8, FORMAT_VERSION);
    put_u32(&mut h, 16, header_bytes as u32);
    put_u32(&mut h, 20, copy_index);
    put_u64(&mut h, 24, HEADER_COPY_BYTES);
    put_u64(&mut h, 32, layout.metadata_offset);
    put_u64(&mut h, 40, layout.metadata_slot_bytes);
    put_u64(&mut h, 48, layout.file_bytes);
    put_u32(&mut h, 56, ns_count as u32);
    put_u32(&mut h, 60, profile_toml.len() as u32);
    for (i, ns) in layout.namespaces.iter().enumerate() {
        let e = HEADER_FIXED_BYTES + i * NAMESPACE_ENTRY_BYTES;
        put_u32(&mut h, e, ns.geometry.lba_bytes);
        put_u64(&mut h, e + 8, ns.geometry.lba_count);
        put_u64(&mut h, e + 16, ns.checksum_table_offset);
        put_u64(&mut h, e + 24, ns.checksum_table_bytes);
        put_u64(&mut h, e + 32, ns.data_offset);
        put_u64(&mut h, e + 40, ns.data_bytes);
    }
    h[HEADER_FIXED_BYTES + ns_count * NAMESPACE_ENTRY_BYTES..]
        .copy_from_slice(profile_toml.as_bytes());
    let crc = header_crc(&h);
    put_u32(&mut h, HEADER_CRC_FIELD.start, crc);
    h
}

/// The meaningful part of a raw header copy: `header_bytes` clamped to what
/// the copy can hold.
fn header_span(raw: &[u8]) -> usize {
    (get_u32(raw, 16) as usize).clamp(HEADER_FIXED_BYTES, raw.len().max(HEADER_FIXED_BYTES))
}

/// Checks a raw header copy's seal: length field, CRC, copy index.
fn check_seal(raw: &[u8], copy_index: u32) -> Result<(), String> {
    let header_bytes = get_u32(raw, 16) as usize;
    if !(HEADER_FIXED_BYTES..=raw.len()).contains(&header_bytes) {
        return Err(format!(
            "header_bytes {header_bytes} is outside {HEADER_FIXED_BYTES}..={}",
            raw.len()
        ));
    }
    let stored = get_u32(raw, HEADER_CRC_FIELD.start);
    let computed = header_crc(&raw[..header_bytes]);
    if stored != computed {
        return Err(format!(
            "header_crc32c mismatch (stored {stored:#010x}, computed {computed:#010x})"
        ));
    }
    let found = get_u32(raw, HEADER_COPY_INDEX_FIELD.start);
    if found != copy_index {
        return Err(format!("copy_index is {found}, expected {copy_index}"));
    }
    if let Some(i) = raw[header_bytes..].iter().position(|b| *b != 0) {
        return Err(format!(
            "byte {} past header_bytes {header_bytes} is not zero",
            header_bytes + i
        ));
    }
    Ok(())
}

/// Name of the header field holding byte `offset`.
fn header_field_name(
    offset: usize,
    namespace_count: usize,
    header_bytes: usize,
) -> (String, usize, usize) {
    if offset >= header_bytes.max(HEADER_FIXED_BYTES) {
        return (
            format!("unused space past header_bytes {header_bytes}"),
            offset,
            1,
        );
    }
    if let Some((at, len, name)) = HEADER_FIELDS
        .iter()
        .find(|(at, len, _)| (*at..at + len).contains(&offset))
    {
        return (name.to_string(), *at, *len);
    }
    let table_end = HEADER_FIXED_BYTES + namespace_count * NAMESPACE_ENTRY_BYTES;
    if offset < table_end {
        let ns = (offset - HEADER_FIXED_BYTES) / NAMESPACE_ENTRY_BYTES;
        let entry = HEADER_FIXED_BYTES + ns * NAMESPACE_ENTRY_BYTES;
        let within = offset - entry;
        if let Some((at, len, name)) = NAMESPACE_FIELDS
            .iter()
            .find(|(at, len, _)| (*at..at + len).contains(&within))
        {
            return (format!("namespace[{ns}].{name}"), entry + at, *len);
        }
    }
    (
        format!("profile_toml (byte {})", offset.saturating_sub(table_end)),
        offset,
        1,
    )
}

/// The first field where two header copies differ (ignoring the CRC and copy
/// index, which legitimately differ): its name and both values.
struct HeaderDifference {
    field: String,
    offset: usize,
    primary: String,
    backup: String,
}

fn first_difference(
    primary: &[u8],
    backup: &[u8],
    namespace_count: usize,
) -> Option<HeaderDifference> {
    let span = primary.len().max(backup.len());
    let ignored = |i: usize| HEADER_CRC_FIELD.contains(&i) || HEADER_COPY_INDEX_FIELD.contains(&i);
    let offset = (0..span).find(|&i| !ignored(i) && primary.get(i) != backup.get(i))?;
    let header_bytes = header_span(primary).min(header_span(backup));
    let (field, at, len) = header_field_name(offset, namespace_count, header_bytes);
    let show = |raw: &[u8]| {
        if field == "magic" {
            let bytes: Vec<u8> = (at..at + len)
                .map(|i| raw.get(i).copied().unwrap_or(0))
                .collect();
            format!("\"{}\"", bytes.escape_ascii())
        } else if len <= 8 {
            format!("{}", get_uint(raw, at, len))
        } else {
            format!("{:#04x}", raw.get(offset).copied().unwrap_or(0))
        }
    };
    Some(HeaderDifference {
        primary: show(primary),
        backup: show(backup),
        field,
        offset,
    })
}

/// Validates a sealed header copy field by field and returns its layout and profile.
fn decode_header(raw: &[u8]) -> Result<(Layout, String), String> {
    let header_bytes = get_u32(raw, 16) as usize;
    let version = get_u32(raw, 8);
    if version != FORMAT_VERSION {
        return Err(format!(
            "format_version {version}: this build reads version {FORMAT_VERSION}"
        ));
    }
    if get_u64(raw, 24) != HEADER_COPY_BYTES {
        return Err(format!(
            "header_copy_bytes {} (expected {HEADER_COPY_BYTES})",
            get_u64(raw, 24)
        ));
    }
    if let Some(i) = (64..HEADER_FIXED_BYTES).find(|&i| raw[i] != 0) {
        return Err(format!("reserved byte {i} is {:#04x}, expected 0", raw[i]));
    }
    let ns_count = get_u32(raw, 56);
    if !(1..=NAMESPACE_COUNT_MAX).contains(&ns_count) {
        return Err(format!(
            "namespace_count {ns_count} is outside 1..={NAMESPACE_COUNT_MAX}"
        ));
    }
    let ns_count = ns_count as usize;
    let profile_bytes = get_u32(raw, 60) as usize;
    let expected_bytes = HEADER_FIXED_BYTES + ns_count * NAMESPACE_ENTRY_BYTES + profile_bytes;
    if header_bytes != expected_bytes {
        return Err(format!(
            "header_bytes {header_bytes} does not match namespace_count {ns_count} and profile_toml_bytes {profile_bytes} (expected {expected_bytes})"
        ));
    }
    let mut geometries = Vec::with_capacity(ns_count);
    for i in 0..ns_count {
        let e = HEADER_FIXED_BYTES + i * NAMESPACE_ENTRY_BYTES;
        if let Some(r) = (e + 4..e + 8).chain(e + 48..e + 64).find(|&r| raw[r] != 0) {
            return Err(format!(
                "namespace[{i}].reserved byte {} is {:#04x}, expected 0",
                r - e,
                raw[r]
            ));
        }
        let geometry = Geometry::new(get_u32(raw, e), get_u64(raw, e + 8))
            .map_err(|err| format!("namespace[{i}] geometry: {err}"))?;
        geometries.push(geometry);
    }
    let slot_bytes = get_u64(raw, 40);
    if !(REGION_ALIGN_BYTES..=METADATA_SLOT_BYTES_MAX).contains(&slot_bytes)
        || slot_bytes & (REGION_ALIGN_BYTES - 1) != 0
    {
        return Err(format!(
            "metadata_slot_bytes {slot_bytes} is not a multiple of {REGION_ALIGN_BYTES} in {REGION_ALIGN_BYTES}..={METADATA_SLOT_BYTES_MAX}"
        ));
    }
    let layout =
        Layout::compute(&geometries, slot_bytes).ok_or("the namespaces do not fit in a file")?;
    let check = |name: String, found: u64, expected: u64| {
        if found == expected {
            Ok(())
        } else {
            Err(format!("{name} is {found}, the layout gives {expected}"))
        }
    };
    check(
        "metadata_offset".into(),
        get_u64(raw, 32),
        layout.metadata_offset,
    )?;
    check("file_bytes".into(), get_u64(raw, 48), layout.file_bytes)?;
    for (i, ns) in layout.namespaces.iter().enumerate() {
        let e = HEADER_FIXED_BYTES + i * NAMESPACE_ENTRY_BYTES;
        check(
            format!("namespace[{i}].checksum_table_offset"),
            get_u64(raw, e + 16),
            ns.checksum_table_offset,
        )?;
        check(
            format!("namespace[{i}].checksum_table_bytes"),
            get_u64(raw, e + 24),
            ns.checksum_table_bytes,
        )?;
        check(
            format!("namespace[{i}].data_offset"),
            get_u64(raw, e + 32),
            ns.data_offset,
        )?;
        check(
            format!("namespace[{i}].data_bytes"),
            get_u64(raw, e + 40),
            ns.data_bytes,
        )?;
    }
    let profile_start = HEADER_FIXED_BYTES + ns_count * NAMESPACE_ENTRY_BYTES;
    let profile = std::str::from_utf8(&raw[profile_start..header_bytes])
        .map_err(|e| format!("profile_toml is not UTF-8 ({e})"))?
        .to_string();
    Ok((layout, profile))
}

/// The image file shared by the image and its namespace views.
#[derive(Debug)]
struct ImageFile {
    file: File,
    path: PathBuf,
    sync_policy: Cell<SyncPolicy>,
    /// Something was written since the last fdatasync.
    dirty: Cell<bool>,
    /// Whether punching holes works here (cleared on the first refusal).
    can_punch: Cell<bool>,
}

impl ImageFile {
    fn io(&self, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), StoreError> {
        self.file.read_exact_at(buf, offset).map_err(|e| self.io(e))
    }

    fn write_all_at(&self, data: &[u8], offset: u64) -> Result<(), StoreError> {
        self.dirty.set(true);
        self.file.write_all_at(data, offset).map_err(|e| self.io(e))
    }

    /// fdatasync if anything was written since the last one (and the policy asks).
    fn sync(&self) -> Result<(), StoreError> {
        if self.dirty.get() && self.sync_policy.get() == SyncPolicy::Durable {
            self.file.sync_data().map_err(|e| self.io(e))?;
        }
        self.dirty.set(false);
        Ok(())
    }

    /// Makes `[offset, offset + len)` read as zeros: punches whole pages where
    /// the file system can, writes zeros elsewhere.
    fn zero_range(&self, offset: u64, len: u64) -> Result<(), StoreError> {
        const PAGE_BYTES: u64 = 4096;
        let end = offset + len;
        let page_start = offset.div_ceil(PAGE_BYTES) * PAGE_BYTES;
        let page_end = end / PAGE_BYTES * PAGE_BYTES;
        if page_end > page_start && self.punch_hole(page_start, page_end - page_start)? {
            self.write_zeros(offset, page_start - offset)?;
            return self.write_zeros(page_end, end - page_end);
        }
        self.write_zeros(offset, len)
    }

    fn write_zeros(&self, mut offset: u64, len: u64) -> Result<(), StoreError> {
        let zeros = [0u8; ZERO_CHUNK_BYTES];
        let end = offset + len;
        while offset < end {
            let n = (end - offset).min(ZERO_CHUNK_BYTES as u64) as usize;
            self.write_all_at(&zeros[..n], offset)?;
            offset += n as u64;
        }
        Ok(())
    }

    /// Deallocates the file's space for the range (reads as zeros afterwards).
    /// Returns false where the file system cannot.
    #[cfg(target_os = "linux")]
    fn punch_hole(&self, offset: u64, len: u64) -> Result<bool, StoreError> {
        use std::os::fd::AsRawFd;
        if !self.can_punch.get() || len == 0 {
            return Ok(false);
        }
        self.dirty.set(true);
        // SAFETY: fallocate only reads its integer arguments; the descriptor
        // stays open for the call (we hold `self.file`). Offsets fit in i64
        // because the layout caps the file at i64::MAX bytes.
        let rc = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset as libc::off_t,
                len as libc::off_t,
            )
        };
        if rc == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) | Some(libc::EINVAL) => {
                self.can_punch.set(false);
                Ok(false)
            }
            _ => Err(self.io(err)),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn punch_hole(&self, _offset: u64, _len: u64) -> Result<bool, StoreError> {
        Ok(false)
    }
}

/// Takes an exclusive advisory lock on the image, so that two processes never
/// write one image.
fn lock_exclusive(file: &File, path: &Path) -> Result<(), StoreError> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock only takes the descriptor and flags; `file` is open.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.kind() == std::io::ErrorKind::WouldBlock {
        return Err(StoreError::InUse {
            path: path.to_path_buf(),
        });
    }
    Err(StoreError::Io {
        path: path.to_path_buf(),
        source: err,
    })
}

/// What one metadata slot holds, once validated.
#[derive(Debug)]
struct SlotContent {
    sequence: u64,
    /// `None` for sequence 0 (the "no metadata yet" slot `create` writes).
    blob: Option<Vec<u8>>,
}

fn encode_slot(slot: usize, sequence: u64, blob: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0u8; SLOT_HEADER_BYTES + blob.len()];
    bytes[..8].copy_from_slice(&METADATA_MAGIC);
    put_u64(&mut bytes, 8, sequence);
    put_u64(&mut bytes, 16, blob.len() as u64);
    put_u32(&mut bytes, 24, crc32c::crc32c(blob));
    put_u32(&mut bytes, 28, slot as u32);
    let slot_crc = crc32c::crc32c(&bytes[..60]);
    put_u32(&mut bytes, 60, slot_crc);
    bytes[SLOT_HEADER_BYTES..].copy_from_slice(blob);
    bytes
}

/// Reads and validates one metadata slot; `Err` says what is wrong with it.
fn read_slot(
    file: &ImageFile,
    layout: &Layout,
    slot: usize,
) -> Result<Result<SlotContent, String>, StoreError> {
    let offset = layout.slot_offset(slot);
    let mut head = [0u8; SLOT_HEADER_BYTES];
    file.read_exact_at(&mut head, offset)?;
    if head[..8] != METADATA_MAGIC {
        return Ok(Err(
            "magic is not ZNSKMETA (never written, or overwritten)".into()
        ));
    }
    let stored = get_u32(&head, 60);
    let computed = crc32c::crc32c(&head[..60]);
    if stored != computed {
        return Ok(Err(format!(
            "slot header crc32c mismatch (stored {stored:#010x}, computed {computed:#010x})"
        )));
    }
    let sequence = get_u64(&head, 8);
    let blob_bytes = get_u64(&head, 16);
    if get_u32(&head, 28) as usize != slot {
        return Ok(Err(format!(
            "slot_index is {}, expected {slot}",
            get_u32(&head, 28)
        )));
    }
    if head[32..60].iter().any(|b| *b != 0) {
        return Ok(Err("reserved bytes are not zero".into()));
    }
    let capacity = layout.metadata_slot_bytes - SLOT_HEADER_BYTES as u64;
    if blob_bytes > capacity {
        return Ok(Err(format!(
            "blob_bytes {blob_bytes} exceeds the slot capacity {capacity}"
        )));
    }
    if sequence == 0 {
        if blob_bytes != 0 {
            return Ok(Err(format!("sequence 0 carries {blob_bytes} blob bytes")));
        }
        return Ok(Ok(SlotContent {
            sequence,
            blob: None,
        }));
    }
    let mut blob = vec![0u8; blob_bytes as usize];
    file.read_exact_at(&mut blob, offset + SLOT_HEADER_BYTES as u64)?;
    let stored = get_u32(&head, 24);
    let computed = crc32c::crc32c(&blob);
    if stored != computed {
        return Ok(Err(format!(
            "sequence {sequence}: blob crc32c mismatch over {blob_bytes} bytes (stored {stored:#010x}, computed {computed:#010x})"
        )));
    }
    Ok(Ok(SlotContent {
        sequence,
        blob: Some(blob),
    }))
}

/// Reads both slots and picks the current one: `(slot index, content)`.
fn current_slot(file: &ImageFile, layout: &Layout) -> Result<(usize, SlotContent), StoreError> {
    let a = read_slot(file, layout, 0)?;
    let b = read_slot(file, layout, 1)?;
    match (a, b) {
        (Ok(a), Ok(b)) if a.sequence == b.sequence => Err(StoreError::Corrupt(format!(
            "metadata slots A and B both hold sequence {}",
            a.sequence
        ))),
        (Ok(a), Ok(b)) => Ok(if a.sequence > b.sequence {
            (0, a)
        } else {
            (1, b)
        }),
        (Ok(a), Err(_)) => Ok((0, a)),
        (Err(_), Ok(b)) => Ok((1, b)),
        (Err(ea), Err(eb)) => Err(StoreError::Corrupt(format!(
            "metadata: both slots fail their checks (slot A: {ea}; slot B: {eb})"
        ))),
    }
}

/// A persistent device image (see the module docs and `docs/image-format.md`).
#[derive(Debug)]
pub struct PersistentImage {
    file: Rc<ImageFile>,
    layout: Layout,
    profile_toml: String,
    /// Slot holding the current metadata (the one `save_metadata` must not touch).
    current_slot: usize,
    /// Sequence number of the current metadata.
    metadata_sequence: u64,
}

impl PersistentImage {
    /// Creates an image at `path` (refusing to replace an existing file) for
    /// `namespaces` given as `(lba_bytes, lba_count)`, storing `profile_toml`.
    pub fn create(
        path: impl AsRef<Path>,
        profile_toml: &str,
        namespaces: &[(u32, u64)],
    ) -> Result<PersistentImage, StoreError> {
        PersistentImage::create_with(path, profile_toml, namespaces, &ImageOptions::default())
    }

    /// [`create`](Self::create) with options.
    pub fn create_with(
        path: impl AsRef<Path>,
        profile_toml: &str,
        namespaces: &[(u32, u64)],
        options: &ImageOptions,
    ) -> Result<PersistentImage, StoreError> {
        let path = path.as_ref();
        if namespaces.is_empty() || namespaces.len() > NAMESPACE_COUNT_MAX as usize {
            return Err(StoreError::Invalid(format!(
                "an image holds 1..={NAMESPACE_COUNT_MAX} namespaces, not {}",
                namespaces.len()
            )));
        }
        let mut geometries = Vec::with_capacity(namespaces.len());
        for (i, (lba_bytes, lba_count)) in namespaces.iter().enumerate() {
            let geometry = Geometry::new(*lba_bytes, *lba_count)
                .map_err(|e| StoreError::Invalid(format!("namespace {i}: {e}")))?;
            geometries.push(geometry);
        }
        let header_bytes =
            HEADER_FIXED_BYTES + namespaces.len() * NAMESPACE_ENTRY_BYTES + profile_toml.len();
        if header_bytes as u64 > HEADER_COPY_BYTES {
            return Err(StoreError::Invalid(format!(
                "the profile TOML ({} bytes) does not fit in the {HEADER_COPY_BYTES}-byte header",
                profile_toml.len()
            )));
        }
        let slot_bytes = match options.metadata_slot_bytes {
            Some(bytes) => round_up(bytes.max(1), REGION_ALIGN_BYTES)
                .filter(|b| *b <= METADATA_SLOT_BYTES_MAX)
                .ok_or_else(|| {
                    StoreError::Invalid(format!(
                        "metadata_slot_bytes {bytes} exceeds {METADATA_SLOT_BYTES_MAX}"
                    ))
                })?,
            None => default_metadata_slot_bytes(&geometries),
        };
        let layout = Layout::compute(&geometries, slot_bytes)
            .ok_or_else(|| StoreError::Invalid("the namespaces do not fit in one file".into()))?;

        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|source| StoreError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        // From here on the file is ours: remove it if creation fails.
        let built = (|| {
            lock_exclusive(&file, path)?;
            let image_file = ImageFile {
                file,
                path: path.to_path_buf(),
                sync_policy: Cell::new(options.sync_policy),
                dirty: Cell::new(true),
                can_punch: Cell::new(true),
            };
            image_file
                .file
                .set_len(layout.file_bytes)
                .map_err(|e| image_file.io(e))?;
            image_file.write_all_at(&encode_header(&layout, profile_toml, 0), 0)?;
            image_file.write_all_at(&encode_header(&layout, profile_toml, 1), HEADER_COPY_BYTES)?;
            // Slot B holds "no metadata yet" (sequence 0); slot A stays a hole,
            // so the first save goes to A and a torn first save falls back to B.
            image_file.write_all_at(&encode_slot(1, 0, &[]), layout.slot_offset(1))?;
            image_file.sync()?;
            if options.sync_policy == SyncPolicy::Durable {
                sync_parent_dir(path)?;
            }
            Ok(PersistentImage {
                file: Rc::new(image_file),
                layout,
                profile_toml: profile_toml.to_string(),
                current_slot: 1,
                metadata_sequence: 0,
            })
        })();
        if built.is_err() {
            let _ = std::fs::remove_file(path);
        }
        built
    }

    /// Opens an existing image, checking everything `create` wrote.
    pub fn open(path: impl AsRef<Path>) -> Result<PersistentImage, StoreError> {
        PersistentImage::open_with(path, &ImageOptions::default())
    }

    /// [`open`](Self::open) with options (only `sync_policy` applies).
    pub fn open_with(
        path: impl AsRef<Path>,
        options: &ImageOptions,
    ) -> Result<PersistentImage, StoreError> {
        let path = path.as_ref();
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        lock_exclusive(&file, path)?;
        let file_len = file.metadata().map_err(io)?.len();
        let image_file = ImageFile {
            file,
            path: path.to_path_buf(),
            sync_policy: Cell::new(options.sync_policy),
            dirty: Cell::new(false),
            can_punch: Cell::new(true),
        };

        // Magic first: a file that is not an image at all says so.
        let mut magic = [0u8; 8];
        let primary_magic_ok = file_len >= 8 && {
            image_file.read_exact_at(&mut magic, 0)?;
            magic == MAGIC
        };
        let backup_magic_ok = file_len >= HEADER_COPY_BYTES + 8 && {
            let mut backup_magic = [0u8; 8];
            image_file.read_exact_at(&mut backup_magic, HEADER_COPY_BYTES)?;
            backup_magic == MAGIC
        };
        if !primary_magic_ok && !backup_magic_ok {
            return Err(StoreError::Corrupt(format!(
                "header magic: found \"{}\", expected \"{}\": not a znskit device image",
                magic[..file_len.min(8) as usize].escape_ascii(),
                MAGIC.escape_ascii()
            )));
        }
        if file_len < 2 * HEADER_COPY_BYTES {
            return Err(StoreError::Corrupt(format!(
                "file length: {file_len} bytes, shorter than the two header copies ({} bytes): truncated",
                2 * HEADER_COPY_BYTES
            )));
        }
        let mut primary = vec![0u8; HEADER_COPY_BYTES as usize];
        let mut backup = vec![0u8; HEADER_COPY_BYTES as usize];
        image_file.read_exact_at(&mut primary, 0)?;
        image_file.read_exact_at(&mut backup, HEADER_COPY_BYTES)?;
        let raw = PersistentImage::pick_header(&primary, &backup)?;
        let (layout, profile_toml) =
            decode_header(raw).map_err(|e| StoreError::Corrupt(format!("header {e}")))?;
        if file_len != layout.file_bytes {
            let what = if file_len < layout.file_bytes {
                "truncated"
            } else {
                "longer than the image"
            };
            return Err(StoreError::Corrupt(format!(
                "file length: {file_len} bytes, the header says {} bytes ({what})",
                layout.file_bytes
            )));
        }
        let (current_slot, content) = current_slot(&image_file, &layout)?;
        Ok(PersistentImage {
            file: Rc::new(image_file),
            layout,
            profile_toml,
            current_slot,
            metadata_sequence: content.sequence,
        })
    }

    /// Checks both header copies and returns the one to decode (the primary),
    /// or names the field that is corrupt.
    fn pick_header<'a>(primary: &'a [u8], backup: &[u8]) -> Result<&'a [u8], StoreError> {
        let primary_seal = check_seal(primary, 0);
        let backup_seal = check_seal(backup, 1);
        let field_count =
            |raw: &[u8]| (get_u32(raw, 56) as usize).min(NAMESPACE_COUNT_MAX as usize);
        match (primary_seal, backup_seal) {
            (Ok(()), Ok(())) => match first_difference(primary, backup, field_count(primary)) {
                None => Ok(primary),
                Some(d) => Err(StoreError::Corrupt(format!(
                    "header copies disagree on field {} at byte {} (primary: {}, backup: {})",
                    d.field, d.offset, d.primary, d.backup
                ))),
            },
            (Err(reason), Ok(())) => Err(StoreError::Corrupt(
                match first_difference(primary, backup, field_count(backup)) {
                    Some(d) => format!(
                        "header field {} at byte {} is damaged in the primary copy (primary: {}, backup: {}; {reason})",
                        d.field, d.offset, d.primary, d.backup
                    ),
                    None => format!("header primary copy: {reason}"),
                },
            )),
            (Ok(()), Err(reason)) => Err(StoreError::Corrupt(
                match first_difference(primary, backup, field_count(primary)) {
                    Some(d) => format!(
                        "header field {} at byte {} is damaged in the backup copy (primary: {}, backup: {}; {reason})",
                        d.field, d.offset, d.primary, d.backup
                    ),
                    None => format!("header backup copy: {reason}"),
                },
            )),
            (Err(p), Err(b)) => {
                Err(StoreError::Corrupt(format!("header: both copies fail their checks (primary: {p}; backup: {b})")))
            }
        }
    }

    /// The device profile stored at creation, as TOML.
    pub fn profile_toml(&self) -> &str {
        &self.profile_toml
    }

    /// The image file's path.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Number of namespaces.
    pub fn namespace_count(&self) -> usize {
        self.layout.namespaces.len()
    }

    /// `(lba_bytes, lba_count)` of namespace `ns`.
    pub fn namespace_geometry(&self, ns: usize) -> Option<(u32, u64)> {
        self.layout
            .namespaces
            .get(ns)
            .map(|n| (n.geometry.lba_bytes, n.geometry.lba_count))
    }

    /// Length of the (sparse) file, in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.layout.file_bytes
    }

    /// Largest blob `save_metadata` accepts, in bytes.
    pub fn metadata_capacity_bytes(&self) -> u64 {
        self.layout.metadata_slot_bytes - SLOT_HEADER_BYTES as u64
    }

    /// Sequence number of the current metadata (0: none saved yet).
    pub fn metadata_sequence(&self) -> u64 {
        self.metadata_sequence
    }

    /// The fdatasync policy in force.
    pub fn sync_policy(&self) -> SyncPolicy {
        self.file.sync_policy.get()
    }

    /// Changes the fdatasync policy (for this image and all its namespace views).
    pub fn set_sync_policy(&self, policy: SyncPolicy) {
        self.file.sync_policy.set(policy);
    }

    /// A store for namespace `ns` backed by this image; views share the file.
    /// For an `ns` out of range, a store whose every call fails with
    /// [`StoreError::Invalid`] (see [`try_namespace_store`](Self::try_namespace_store)).
    pub fn namespace_store(&self, ns: usize) -> Box<dyn DataStore> {
        match self.try_namespace_store(ns) {
            Ok(store) => store,
            Err(e) => Box::new(FailedStore::new(
                StoreKind::Image,
                super::LBA_BYTES_MIN,
                e.to_string(),
            )),
        }
    }

    /// Like [`namespace_store`](Self::namespace_store), but reports a bad `ns`.
    pub fn try_namespace_store(&self, ns: usize) -> Result<Box<dyn DataStore>, StoreError> {
        let layout = self.layout.namespaces.get(ns).ok_or_else(|| {
            StoreError::Invalid(format!(
                "namespace {ns} does not exist (the image has {})",
                self.namespace_count()
            ))
        })?;
        Ok(Box::new(ImageNamespace {
            file: Rc::clone(&self.file),
            ns_index: ns as u32,
            layout: *layout,
            checksums: Vec::new(),
        }))
    }

    /// Stores `blob` as the new metadata: makes all data so far durable, writes
    /// the slot not holding the current metadata, makes it durable.
    pub fn save_metadata(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        if blob.len() as u64 > self.metadata_capacity_bytes() {
            return Err(StoreError::Invalid(format!(
                "metadata blob of {} bytes exceeds the slot capacity of {} bytes (create the image with a larger ImageOptions::metadata_slot_bytes)",
                blob.len(),
                self.metadata_capacity_bytes()
            )));
        }
        let sequence = self.metadata_sequence.checked_add(1).ok_or_else(|| {
            StoreError::Corrupt("metadata sequence number is exhausted (u64::MAX)".into())
        })?;
        // Barrier: the metadata may describe any data written so far.
        self.file.sync()?;
        let target = 1 - self.current_slot;
        self.file.write_all_at(
            &encode_slot(target, sequence, blob),
            self.layout.slot_offset(target),
        )?;
        self.file.sync()?;
        self.current_slot = target;
        self.metadata_sequence = sequence;
        Ok(())
    }

    /// The current metadata blob (`None` if none was ever saved), read back
    /// from the file and checked.
    pub fn load_metadata(&self) -> Result<Option<Vec<u8>>, StoreError> {
        let (_, content) = current_slot(&self.file, &self.layout)?;
        Ok(content.blob)
    }

    /// A metadata slot that was written once but now fails its checks, if any
    /// (while the other slot is valid and in use). It is either a save torn by
    /// a crash — then the older zone table is the right one — or damage to the
    /// newest table; the two cannot be told apart, so callers must say so.
    pub fn damaged_metadata_slot(&self) -> Result<Option<String>, StoreError> {
        for slot in 0..2 {
            if let Err(why) = read_slot(&self.file, &self.layout, slot)? {
                let mut head = [0u8; SLOT_HEADER_BYTES];
                self.file
                    .read_exact_at(&mut head, self.layout.slot_offset(slot))?;
                if head.iter().any(|b| *b != 0) {
                    let name = if slot == 0 { "A" } else { "B" };
                    return Ok(Some(format!("metadata slot {name}: {why}")));
                }
            }
        }
        Ok(None)
    }

    /// Makes every write and deallocate so far durable (fdatasync, per policy).
    pub fn sync(&self) -> Result<(), StoreError> {
        self.file.sync()
    }
}

/// fsync of the directory holding `path`, so that a new file's name is durable.
fn sync_parent_dir(path: &Path) -> Result<(), StoreError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)
        .and_then(|dir| dir.sync_all())
        .map_err(|source| StoreError::Io {
            path: parent.to_path_buf(),
            source,
        })
}

/// Checksum entry of a block: `crc32c(ns_index ‖ lba ‖ data) | 1` (never 0).
fn block_checksum(ns_index: u32, lba: u64, data: &[u8]) -> u32 {
    let mut seed = [0u8; 12];
    seed[..4].copy_from_slice(&ns_index.to_le_bytes());
    seed[4..].copy_from_slice(&lba.to_le_bytes());
    crc32c::crc32c_append(crc32c::crc32c(&seed), data) | 1
}

/// One namespace of a [`PersistentImage`], as a [`DataStore`].
struct ImageNamespace {
    file: Rc<ImageFile>,
    ns_index: u32,
    layout: NamespaceLayout,
    /// Scratch for checksum entries.
    checksums: Vec<u8>,
}

impl ImageNamespace {
    fn data_at(&self, lba: u64) -> u64 {
        self.layout.data_offset + lba * u64::from(self.layout.geometry.lba_bytes)
    }
    fn checksum_at(&self, lba: u64) -> u64 {
        self.layout.checksum_table_offset + lba * CHECKSUM_ENTRY_BYTES
    }
}

impl DataStore for ImageNamespace {
    fn kind(&self) -> StoreKind {
        StoreKind::Image
    }

    fn lba_bytes(&self) -> u32 {
        self.layout.geometry.lba_bytes
    }

    fn write(&mut self, lba: u64, data: &[u8]) -> Result<(), StoreError> {
        let nlb = self.layout.geometry.check_io(lba, data.len())?;
        if nlb == 0 {
            return Ok(());
        }
        let block_bytes = self.layout.geometry.lba_bytes as usize;
        self.checksums.clear();
        for (k, block) in data.chunks_exact(block_bytes).enumerate() {
            let crc = block_checksum(self.ns_index, lba + k as u64, block);
            self.checksums.extend_from_slice(&crc.to_le_bytes());
        }
        // Data first, then checksums: see "Crash ordering" in the module docs.
        self.file.write_all_at(data, self.data_at(lba))?;
        self.file
            .write_all_at(&self.checksums, self.checksum_at(lba))
    }

    fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StoreError> {
        let nlb = self.layout.geometry.check_io(lba, buf.len())?;
        if nlb == 0 {
            return Ok(());
        }
        let block_bytes = self.layout.geometry.lba_bytes as usize;
        self.checksums
            .resize(nlb as usize * CHECKSUM_ENTRY_BYTES as usize, 0);
        let checksum_offset = self.checksum_at(lba);
        self.file
            .read_exact_at(&mut self.checksums, checksum_offset)?;
        if self.checksums.iter().all(|b| *b == 0) {
            buf.fill(0);
            return Ok(());
        }
        self.file.read_exact_at(buf, self.data_at(lba))?;
        for (k, (block, entry)) in buf
            .chunks_exact_mut(block_bytes)
            .zip(self.checksums.chunks_exact(4))
            .enumerate()
        {
            let stored = u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]);
            if stored == 0 {
                block.fill(0);
            } else if stored != block_checksum(self.ns_index, lba + k as u64, block) {
                return Err(StoreError::BadBlock {
                    lba: lba + k as u64,
                });
            }
        }
        Ok(())
    }

    fn deallocate(&mut self, lba: u64, nlb: u64) -> Result<(), StoreError> {
        self.layout.geometry.check_range(lba, nlb)?;
        if nlb == 0 {
            return Ok(());
        }
        // Checksums first (the blocks read as zeros from here on), then give
        // the data's space back to the file system where it allows.
        self.file
            .zero_range(self.checksum_at(lba), nlb * CHECKSUM_ENTRY_BYTES)?;
        let data_len = nlb * u64::from(self.layout.geometry.lba_bytes);
        self.file.punch_hole(self.data_at(lba), data_len)?;
        Ok(())
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        self.file.sync()
    }

    fn resident_bytes(&self) -> u64 {
        (std::mem::size_of::<ImageNamespace>() + self.checksums.capacity()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_image(dir: &Path) -> (PathBuf, PersistentImage) {
        let path = dir.join("t.img");
        let options = ImageOptions {
            metadata_slot_bytes: Some(1),
            sync_policy: SyncPolicy::PageCacheOnly,
        };
        let image = PersistentImage::create_with(
            &path,
            "name = \"t\"\n",
            &[(512, 64), (4096, 16)],
            &options,
        )
        .unwrap();
        (path, image)
    }

    /// Rewrites both header copies with `edit` applied and valid CRCs.
    fn reseal(path: &Path, edit: impl Fn(&mut Vec<u8>)) {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        for copy in 0..2u64 {
            let mut raw = vec![0u8; HEADER_COPY_BYTES as usize];
            file.read_exact_at(&mut raw, copy * HEADER_COPY_BYTES)
                .unwrap();
            edit(&mut raw);
            let span = (get_u32(&raw, 16) as usize).min(raw.len());
            let crc = header_crc(&raw[..span]);
            put_u32(&mut raw, 12, crc);
            file.write_all_at(&raw, copy * HEADER_COPY_BYTES).unwrap();
        }
    }

    #[test]
    fn layout_is_aligned_and_ordered() {
        let g = [
            Geometry::new(512, 64).unwrap(),
            Geometry::new(4096, 16).unwrap(),
        ];
        let l = Layout::compute(&g, REGION_ALIGN_BYTES).unwrap();
        assert_eq!(l.metadata_offset, 2 << 20);
        assert_eq!(l.namespaces[0].checksum_table_offset, 4 << 20);
        assert_eq!(l.namespaces[1].checksum_table_offset, 5 << 20);
        assert_eq!(l.namespaces[0].data_offset, 6 << 20);
        assert_eq!(l.namespaces[1].data_offset, 7 << 20);
        assert_eq!(l.file_bytes, 8 << 20);
    }

    #[test]
    fn a_resealed_header_with_a_wrong_field_is_refused_by_name() {
        type HeaderEdit = fn(&mut Vec<u8>);
        let cases: &[(&str, HeaderEdit)] = &[
            ("namespace[1].data_offset", |raw| {
                put_u64(raw, 128 + 64 + 32, 1 << 20)
            }),
            ("namespace[0] geometry", |raw| put_u32(raw, 128, 1000)),
            ("file_bytes", |raw| put_u64(raw, 48, 9 << 20)),
            ("format_version 2", |raw| put_u32(raw, 8, 2)),
            ("namespace_count", |raw| put_u32(raw, 56, 0)),
            ("metadata_slot_bytes", |raw| put_u64(raw, 40, 12345)),
            ("reserved byte 100", |raw| raw[100] = 1),
            ("profile_toml is not UTF-8", |raw| raw[128 + 128] = 0xFF),
        ];
        for (expected, edit) in cases {
            let dir = tempfile::tempdir().unwrap();
            let (path, image) = small_image(dir.path());
            drop(image);
            reseal(&path, edit);
            let err = PersistentImage::open(&path).unwrap_err();
            assert!(matches!(err, StoreError::Corrupt(_)), "{expected}: {err}");
            assert!(
                err.to_string().contains(expected),
                "expected '{expected}' in: {err}"
            );
        }
    }

    #[test]
    fn random_resealed_headers_never_panic() {
        use rand::{Rng, SeedableRng};
        let dir = tempfile::tempdir().unwrap();
        let (path, image) = small_image(dir.path());
        drop(image);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut pristine_headers = vec![0u8; 2 * HEADER_COPY_BYTES as usize];
        file.read_exact_at(&mut pristine_headers, 0).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x1A6E);
        for _ in 0..300 {
            file.write_all_at(&pristine_headers, 0).unwrap();
            let edits: Vec<(usize, u8)> = (0..rng.gen_range(1..4))
                .map(|_| (rng.gen_range(0..300), rng.gen()))
                .collect();
            reseal(&path, |raw| {
                for (at, value) in &edits {
                    raw[*at] = *value;
                }
            });
            if let Ok(image) = PersistentImage::open(&path) {
                let _ = image.load_metadata();
                for ns in 0..image.namespace_count() + 1 {
                    let mut store = image.namespace_store(ns);
                    let mut buf = vec![0u8; store.lba_bytes().max(512) as usize];
                    let _ = store.read(0, &mut buf);
                }
            }
        }
    }
}
