//! The C ABI the shim (`c/znskit_fio.c`) calls, and the per-process state
//! behind it: the registry of device servers by fio `filename` (a server is
//! started once, in fio's main process, and inherited by the job processes
//! fio forks) and the control connections fio's main process uses for the
//! zone report. Every function catches panics and reports them as EIO: no
//! unwinding crosses into fio.
//!
//! Conventions: functions return 0 (or a count) on success and a negative
//! errno on failure; a message for fio's log goes to `err` (NUL-terminated,
//! truncated to `err_len`).

use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::client::{describe_status, Client, IoKind};
use crate::proto::{Geometry, Zone};
use crate::server::{DeviceConfig, Server};

/// The device as the shim sees it (all sizes in bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ZnskitGeometry {
    pub lba_bytes: u64,
    pub capacity_bytes: u64,
    pub zone_bytes: u64,
    pub zone_cap_bytes: u64,
    pub zone_count: u64,
    pub max_open_zones: u64,
    pub max_active_zones: u64,
    pub max_transfer_bytes: u64,
    /// 1 for a zoned namespace, 0 for a conventional one.
    pub zoned: u64,
}

impl From<Geometry> for ZnskitGeometry {
    fn from(g: Geometry) -> ZnskitGeometry {
        ZnskitGeometry {
            lba_bytes: g.lba_bytes,
            capacity_bytes: g.capacity_bytes,
            zone_bytes: g.zone_bytes,
            zone_cap_bytes: g.zone_cap_bytes,
            zone_count: g.zone_count,
            max_open_zones: g.max_open_zones,
            max_active_zones: g.max_active_zones,
            max_transfer_bytes: g.max_transfer_bytes,
            zoned: u64::from(g.zoned),
        }
    }
}

/// A device server known to this process: started here, or inherited from
/// the process fio forked this one from.
struct Entry {
    cfg: DeviceConfig,
    name: String,
    geometry: Geometry,
    /// Only in the process that started it.
    server: Option<Server>,
    owner_pid: u32,
}

static SERVERS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
/// Control connections of this process (pid-checked: a forked child makes
/// its own).
static CONTROL: Mutex<Vec<(String, Client)>> = Mutex::new(Vec::new());
/// The process that loaded the engine (fio's main process).
static LOADER_PID: AtomicU32 = AtomicU32::new(0);

fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        eprintln!("znskit-fio: internal error (panic); the command fails with EIO");
        fallback
    })
}

fn write_err(err: *mut c_char, err_len: usize, msg: &str) {
    if err.is_null() || err_len == 0 {
        return;
    }
    let bytes = msg.as_bytes();
    let n = bytes.len().min(err_len - 1);
    // SAFETY: the caller gives a writable buffer of err_len bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), err.cast::<u8>(), n);
        *err.add(n) = 0;
    }
}

fn str_arg<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the shim passes NUL-terminated strings owned by fio.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// Called by the shim's library constructor: remembers fio's main process.
#[no_mangle]
pub extern "C" fn znskit_fio_loaded() {
    LOADER_PID.store(std::process::id(), Ordering::SeqCst);
}

/// Makes sure a device server for `filename` runs (starting it in fio's main
/// process) with these options, and returns its geometry. `host_stack` may
/// be NULL (io-uring-none), `speed` ≤ 0 means 1.0, `seed` 0 means 1,
/// `spin_us` < 0 means the default busy-poll window.
///
/// # Safety
/// Pointers must be valid: `filename` (and `host_stack` unless NULL) are
/// NUL-terminated, `geo` is writable, `err` holds `err_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_setup(
    filename: *const c_char,
    speed: f64,
    host_stack: *const c_char,
    seed: u64,
    spin_us: i64,
    geo: *mut ZnskitGeometry,
    err: *mut c_char,
    err_len: usize,
) -> c_int {
    guard(-libc::EIO, || {
        let result = setup(filename, speed, host_stack, seed, spin_us);
        match result {
            Ok(g) => {
                if !geo.is_null() {
                    // SAFETY: caller-provided output.
                    unsafe { *geo = g.into() };
                }
                0
            }
            Err((errno, msg)) => {
                write_err(err, err_len, &msg);
                -errno
            }
        }
    })
}

fn setup(
    filename: *const c_char,
    speed: f64,
    host_stack: *const c_char,
    seed: u64,
    spin_us: i64,
) -> Result<Geometry, (i32, String)> {
    let filename = str_arg(filename).ok_or((libc::EINVAL, "filename is not UTF-8".into()))?;
    let mut cfg = DeviceConfig::new(filename);
    if speed > 0.0 {
        cfg.speed = speed;
    }
    if let Some(stack) = str_arg(host_stack).filter(|s| !s.is_empty()) {
        cfg.host_stack = stack
            .parse()
            .map_err(|m| (libc::EINVAL, format!("znskit_host_stack={stack}: {m}")))?;
    }
    if seed != 0 {
        cfg.seed = seed;
    }
    if spin_us >= 0 {
        cfg.spin_ns = (spin_us as u64).saturating_mul(1000);
    }
    let mut servers = SERVERS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = servers.iter().find(|e| e.cfg.filename == filename) {
        if e.cfg != cfg {
            return Err((
                libc::EINVAL,
                format!(
                    "jobs on {filename} ask for different znskit options ({:?} and {:?}); one device, one set of options",
                    e.cfg, cfg
                ),
            ));
        }
        return Ok(e.geometry);
    }
    let pid = std::process::id();
    let loader = LOADER_PID.load(Ordering::SeqCst);
    if loader != 0 && loader != pid {
        return Err((
            libc::EINVAL,
            format!(
                "{filename}: the device must be started in fio's main process so that every job sees it; \
                 this job process ({pid}) has none (create_serialize=0 is not supported with this engine)"
            ),
        ));
    }
    let server = Server::start(&cfg).map_err(|e| (libc::EINVAL, e.to_string()))?;
    let geometry = server.geometry();
    servers.push(Entry {
        cfg,
        name: server.name().to_string(),
        geometry,
        server: Some(server),
        owner_pid: pid,
    });
    Ok(geometry)
}

/// Stops the device servers this process started (their images are
/// saved). The shim calls it at exit of fio's main process.
#[no_mangle]
pub extern "C" fn znskit_fio_shutdown() {
    guard((), || {
        let pid = std::process::id();
        CONTROL
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let mut servers = SERVERS.lock().unwrap_or_else(PoisonError::into_inner);
        for e in servers.iter_mut() {
            if e.owner_pid == pid {
                if let Some(mut s) = e.server.take() {
                    s.stop();
                }
            }
        }
        servers.retain(|e| e.owner_pid != pid);
    })
}

fn server_name(filename: &str) -> Option<String> {
    SERVERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find(|e| e.cfg.filename == filename)
        .map(|e| e.name.clone())
}

/// A new connection to the device server of `filename` (set up before by
/// [`znskit_fio_setup`], here or in the process this one was forked from);
/// NULL on failure (message in `err`).
///
/// # Safety
/// `filename` is NUL-terminated; `err` holds `err_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_open(
    filename: *const c_char,
    err: *mut c_char,
    err_len: usize,
) -> *mut Client {
    guard(std::ptr::null_mut(), || {
        let Some(filename) = str_arg(filename) else {
            write_err(err, err_len, "filename is not UTF-8");
            return std::ptr::null_mut();
        };
        let Some(name) = server_name(filename) else {
            write_err(
                err,
                err_len,
                &format!("{filename}: no device set up in this fio run"),
            );
            return std::ptr::null_mut();
        };
        match Client::connect(&name) {
            Ok(c) => Box::into_raw(Box::new(c)),
            Err(e) => {
                write_err(
                    err,
                    err_len,
                    &format!("{filename}: cannot reach the device server: {e}"),
                );
                std::ptr::null_mut()
            }
        }
    })
}

/// Closes a connection made by [`znskit_fio_open`].
///
/// # Safety
/// `client` came from `znskit_fio_open` and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_close(client: *mut Client) {
    guard((), || {
        if !client.is_null() {
            // SAFETY: ownership returns from the shim.
            drop(unsafe { Box::from_raw(client) });
        }
    })
}

/// The client to use in this process: `client` if it belongs to it, else
/// the control connection for `filename`.
fn with_client<T>(
    client: *mut Client,
    filename: *const c_char,
    f: impl FnOnce(&mut Client) -> Result<T, i32>,
) -> Result<T, i32> {
    let pid = std::process::id();
    if !client.is_null() {
        // SAFETY: a live client from znskit_fio_open, used by one thread.
        let c = unsafe { &mut *client };
        if c.pid() == pid {
            return f(c);
        }
    }
    let filename = str_arg(filename).ok_or(libc::EINVAL)?;
    let mut control = CONTROL.lock().unwrap_or_else(PoisonError::into_inner);
    control.retain(|(_, c)| c.pid() == pid);
    if let Some((_, c)) = control.iter_mut().find(|(n, _)| n == filename) {
        return f(c);
    }
    let name = server_name(filename).ok_or(libc::ENODEV)?;
    let c = Client::connect(&name).map_err(|e| {
        eprintln!("znskit-fio: {filename}: cannot reach the device server: {e}");
        libc::EIO
    })?;
    control.push((filename.to_string(), c));
    let (_, c) = control.last_mut().expect("just pushed");
    f(c)
}

/// Allocates `len_bytes` of I/O memory shared with the device server.
///
/// # Safety
/// `client` came from `znskit_fio_open`.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_iomem_alloc(client: *mut Client, len_bytes: usize) -> *mut u8 {
    guard(std::ptr::null_mut(), || {
        if client.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: a live client.
        let c = unsafe { &mut *client };
        match c.alloc_region(len_bytes) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("znskit-fio: cannot share {len_bytes} bytes of I/O memory: {e}");
                std::ptr::null_mut()
            }
        }
    })
}

/// Frees the memory of [`znskit_fio_iomem_alloc`].
///
/// # Safety
/// `client` came from `znskit_fio_open`.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_iomem_free(client: *mut Client) {
    guard((), || {
        if !client.is_null() {
            // SAFETY: a live client.
            unsafe { &mut *client }.free_region();
        }
    })
}

/// Queues one I/O: `kind` 0 read, 1 write, 2 flush. 0 or -errno.
///
/// # Safety
/// `client` came from `znskit_fio_open`; `buf` points into its I/O memory.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_queue(
    client: *mut Client,
    tag: u64,
    kind: c_int,
    offset_bytes: u64,
    len_bytes: u64,
    buf: *const u8,
) -> c_int {
    guard(-libc::EIO, || {
        if client.is_null() {
            return -libc::EINVAL;
        }
        let kind = match kind {
            0 => IoKind::Read,
            1 => IoKind::Write,
            2 => IoKind::Flush,
            _ => return -libc::EINVAL,
        };
        // SAFETY: a live client.
        let c = unsafe { &mut *client };
        match c.queue(tag, kind, offset_bytes, len_bytes, buf) {
            Ok(()) => 0,
            Err(e) => -e,
        }
    })
}

/// Sends the queued I/O. 0 or -errno.
///
/// # Safety
/// `client` came from `znskit_fio_open`.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_commit(client: *mut Client) -> c_int {
    guard(-libc::EIO, || {
        if client.is_null() {
            return -libc::EINVAL;
        }
        // SAFETY: a live client.
        match unsafe { &mut *client }.commit() {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("znskit-fio: lost the device server: {e}");
                -libc::EIO
            }
        }
    })
}

/// Reaps between `min` and `max` completions, waiting at most `timeout_ms`
/// (negative: no limit). Count or -errno.
///
/// # Safety
/// `client` came from `znskit_fio_open`.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_getevents(
    client: *mut Client,
    min: u32,
    max: u32,
    timeout_ms: c_int,
) -> c_int {
    guard(-libc::EIO, || {
        if client.is_null() {
            return -libc::EINVAL;
        }
        // SAFETY: a live client.
        match unsafe { &mut *client }.reap(min as usize, max as usize, timeout_ms) {
            Ok(n) => n as c_int,
            Err(e) => {
                eprintln!("znskit-fio: lost the device server: {e}");
                -libc::EIO
            }
        }
    })
}

/// Completion `idx` of the last reap: its tag, errno (0 = success) and NVMe
/// status. 0, or -EINVAL for a bad index.
///
/// # Safety
/// `client` came from `znskit_fio_open`; the outputs are writable.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_event(
    client: *mut Client,
    idx: u32,
    tag: *mut u64,
    errno: *mut c_int,
    nvme_status: *mut u16,
) -> c_int {
    guard(-libc::EIO, || {
        if client.is_null() {
            return -libc::EINVAL;
        }
        // SAFETY: a live client.
        let Some(c) = unsafe { &*client }.event(idx as usize) else {
            return -libc::EINVAL;
        };
        // SAFETY: caller-provided outputs.
        unsafe {
            *tag = c.tag;
            *errno = c.errno;
            *nvme_status = c.nvme_status;
        }
        0
    })
}

/// Writes a description of NVMe status `code` to `out`.
///
/// # Safety
/// `out` holds `out_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_describe_status(code: u16, out: *mut c_char, out_len: usize) {
    guard((), || write_err(out, out_len, &describe_status(code)))
}

/// Reports at most `nr_zones` zones from the zone holding `offset_bytes`
/// into `zones`. Count or -errno.
///
/// # Safety
/// `client` is NULL or from `znskit_fio_open`; `filename` NUL-terminated;
/// `zones` holds `nr_zones` entries.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_report_zones(
    client: *mut Client,
    filename: *const c_char,
    offset_bytes: u64,
    zones: *mut Zone,
    nr_zones: u32,
) -> c_int {
    guard(-libc::EIO, || {
        let got = with_client(client, filename, |c| c.report_zones(offset_bytes, nr_zones));
        match got {
            Ok(list) => {
                let n = list.len().min(nr_zones as usize);
                // SAFETY: the caller's array holds nr_zones entries.
                let out = unsafe { std::slice::from_raw_parts_mut(zones, n) };
                out.copy_from_slice(&list[..n]);
                n as c_int
            }
            Err(e) => -e,
        }
    })
}

/// Resets (`finish` 0) or finishes (`finish` 1) the zones of a byte range.
/// 0 or -errno.
///
/// # Safety
/// `client` is NULL or from `znskit_fio_open`; `filename` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_zone_range(
    client: *mut Client,
    filename: *const c_char,
    finish: c_int,
    offset_bytes: u64,
    len_bytes: u64,
) -> c_int {
    guard(-libc::EIO, || {
        match with_client(client, filename, |c| {
            c.zone_range(finish != 0, offset_bytes, len_bytes)
        }) {
            Ok(()) => 0,
            Err(e) => -e,
        }
    })
}

/// The geometry of the device set up for `filename`. 0, or -ENODEV when
/// none is.
///
/// # Safety
/// `filename` is NUL-terminated; `geo` is writable.
#[no_mangle]
pub unsafe extern "C" fn znskit_fio_geometry(
    filename: *const c_char,
    geo: *mut ZnskitGeometry,
) -> c_int {
    guard(-libc::EIO, || {
        let Some(filename) = str_arg(filename) else {
            return -libc::EINVAL;
        };
        let servers = SERVERS.lock().unwrap_or_else(PoisonError::into_inner);
        match servers.iter().find(|e| e.cfg.filename == filename) {
            Some(e) => {
                if !geo.is_null() {
                    // SAFETY: caller-provided output.
                    unsafe { *geo = e.geometry.into() };
                }
                0
            }
            None => -libc::ENODEV,
        }
    })
}
