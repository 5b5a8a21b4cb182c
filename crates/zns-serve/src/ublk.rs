//! The ublk side: one ublk device per served device, its queue thread, and
//! each request's trip: descriptor → decode → data in from the kernel
//! (user copy: `pread` on `/dev/ublkcN`) → the runtime thread (a [`Link`])
//! → data out (`pwrite`) → commit with the result (and an append's LBA).
//!
//! A queue thread runs libublk's async queue: one task per tag on a local
//! executor over the queue's io_uring. A task waiting for the runtime
//! thread waits on an eventfd read submitted to that same ring, so the
//! runtime thread wakes it by writing the eventfd.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use libublk::ctrl::{UblkCtrl, UblkCtrlBuilder};
use libublk::io::{UblkDev, UblkIOCtx, UblkQueue};
use libublk::{sys, BufDesc, UblkError, UblkFlags};

use crate::exec::{Done, Failure};
use crate::host::{HostedDevice, Link};
use crate::request::{decode, IoDesc, Request};

/// How each ublk device is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UblkOptions {
    /// Requests in flight per device (the ublk queue depth).
    pub queue_depth: u16,
    /// Each request buffer; caps the kernel's request size.
    pub io_buf_bytes: u32,
}

impl Default for UblkOptions {
    fn default() -> UblkOptions {
        UblkOptions {
            queue_depth: 64,
            io_buf_bytes: 512 * 1024,
        }
    }
}

/// Why a ublk device could not be added or ended badly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UblkSetupError {
    #[error("{name}: adding the ublk device failed: {source}")]
    Add { name: String, source: UblkError },
    #[error("{name}: the ublk device did not start: {source}")]
    Start { name: String, source: UblkError },
    #[error("{name}: the ublk device's thread could not start: {source}")]
    Thread {
        name: String,
        source: std::io::Error,
    },
}

/// A served ublk device.
pub struct UblkDevice {
    ctrl: Arc<UblkCtrl>,
    thread: Option<JoinHandle<Result<(), UblkError>>>,
    /// `/dev/ublkbN`.
    pub block_path: String,
    pub dev_id: u32,
}

impl UblkDevice {
    /// Adds a ublk device for `device` (reached through `link`) and starts
    /// serving it; returns once `/dev/ublkbN` exists.
    pub fn add(
        device: &HostedDevice,
        link: Link,
        opts: UblkOptions,
    ) -> Result<UblkDevice, UblkSetupError> {
        let name = device.name.clone();
        let zoned = device.geometry.zoned.is_some();
        let mut ctrl_flags = u64::from(sys::UBLK_F_USER_COPY | sys::UBLK_F_CMD_IOCTL_ENCODE);
        if zoned {
            ctrl_flags |= u64::from(sys::UBLK_F_ZONED);
        }
        let ctrl = UblkCtrlBuilder::default()
            .name("znskit")
            .nr_queues(1)
            .depth(opts.queue_depth)
            .io_buf_bytes(opts.io_buf_bytes)
            .ctrl_flags(ctrl_flags)
            .dev_flags(UblkFlags::UBLK_DEV_F_ADD_DEV)
            .build()
            .map_err(|source| UblkSetupError::Add {
                name: name.clone(),
                source,
            })?;
        let ctrl = Arc::new(ctrl);
        let dev_id = ctrl.dev_info().dev_id;
        let block_path = ctrl.get_bdev_path();
        let params = crate::params::ublk_params(&device.geometry);
        let capacity_bytes = device.geometry.capacity_bytes;
        let lba_bytes = device.geometry.lba_bytes;
        let depth = opts.queue_depth;
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let run_ctrl = ctrl.clone();
        let label = name.clone();
        let thread = std::thread::Builder::new()
            .name(format!("zns-serve-ublk{dev_id}"))
            .spawn(move || {
                ctrl_ring_on_this_thread()?;
                let tgt_init = move |dev: &mut UblkDev| {
                    dev.tgt.dev_size = capacity_bytes;
                    dev.tgt.params = params;
                    // each tag has one ublk command or one eventfd read in
                    // flight, never both
                    dev.tgt.sq_depth = depth;
                    dev.tgt.cq_depth = depth;
                    Ok(())
                };
                let q_fn = move |qid: u16, dev: &UblkDev| {
                    serve_queue(qid, dev, &link, lba_bytes, &label);
                };
                let result = run_ctrl.run_target(tgt_init, q_fn, move |_ctrl| {
                    let _ = ready_tx.send(());
                });
                let _ = run_ctrl.del_dev();
                result.map(|_| ())
            })
            .map_err(|source| {
                // the device was added already: remove it
                let _ = ctrl.del_dev();
                UblkSetupError::Thread {
                    name: name.clone(),
                    source,
                }
            })?;
        if ready_rx.recv().is_err() {
            // the thread ended without starting the device
            let source = match thread.join() {
                Ok(Err(e)) => e,
                _ => UblkError::OtherError(-libc::EIO),
            };
            return Err(UblkSetupError::Start { name, source });
        }
        Ok(UblkDevice {
            ctrl,
            thread: Some(thread),
            block_path,
            dev_id,
        })
    }

    /// Stops the device (requests in flight complete first) and removes it.
    pub fn stop(&mut self) {
        if self.thread.is_none() {
            return;
        }
        if ctrl_ring_on_this_thread().is_ok() {
            let _ = self.ctrl.kill_dev();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A ublk device whose server died without removing it (a `kill -9`):
/// the kernel removes its block device, but its character device and
/// number stay until someone deletes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadDevice {
    pub dev_id: u32,
    /// Deleted, or why not.
    pub outcome: Result<(), String>,
}

/// Deletes the ublk devices left by servers that are gone: the device is
/// dead (the kernel has stopped it and removed its block device), it does
/// not wait for a new server (no user recovery), and no process holds its
/// character device `/dev/ublkcN` open (a server opens it before it starts
/// its device, so a device another server is setting up is left alone).
/// The kernel forgets a stopped device's server (its pid reads -1), so
/// that is what tells. Returns the devices found, deleted or not (and
/// why). The deletion does not wait for the kernel to release the device
/// (`UBLK_CMD_DEL_DEV_ASYNC`): a file system still mounted on it must not
/// hang the new server.
pub fn remove_dead_devices() -> Vec<DeadDevice> {
    let Ok(entries) = std::fs::read_dir("/sys/class/ublk-char") else {
        return Vec::new();
    };
    if ctrl_ring_on_this_thread().is_err() {
        return Vec::new();
    }
    let ids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_prefix("ublkc")?.parse::<u32>().ok()
        })
        .collect();
    let mut found = Vec::new();
    for dev_id in ids {
        let Ok(ctrl) = UblkCtrl::new_simple(dev_id as i32) else {
            continue;
        };
        if ctrl.read_dev_info().is_err() {
            continue;
        }
        let info = ctrl.dev_info();
        let recovers = info.flags & u64::from(sys::UBLK_F_USER_RECOVERY) != 0;
        if u32::from(info.state) != sys::UBLK_S_DEV_DEAD
            || recovers
            || char_device_in_use(&format!("/dev/ublkc{dev_id}"))
        {
            continue;
        }
        let outcome = ctrl
            .del_dev_async()
            .map(|_| ())
            .map_err(|e| format!("deleting it failed: {e}"));
        found.push(DeadDevice { dev_id, outcome });
    }
    found
}

/// Whether any process holds `path` open (a scan of /proc/*/fd; a process
/// whose descriptors cannot be read is skipped — `zns serve` runs as root,
/// which reads them all).
fn char_device_in_use(path: &str) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return true;
    };
    for p in procs.flatten() {
        if !p
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue; // gone meanwhile
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == path) {
                return true;
            }
        }
    }
    false
}

/// libublk sends control commands through a ring of the calling thread:
/// every thread that adds, starts, stops or removes a device needs one.
fn ctrl_ring_on_this_thread() -> Result<(), UblkError> {
    libublk::ublk_init_ctrl_task_ring(|ring| {
        if ring.is_none() {
            *ring = Some(
                io_uring::IoUring::<io_uring::squeue::Entry128>::builder()
                    .build(16)
                    .map_err(UblkError::IOError)?,
            );
        }
        Ok(())
    })
}

impl Drop for UblkDevice {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One queue: a task per tag, driven until the device stops.
fn serve_queue(qid: u16, dev: &UblkDev, link: &Link, lba_bytes: u64, name: &str) {
    let q = match UblkQueue::new(qid, dev) {
        Ok(q) => Rc::new(q),
        Err(e) => {
            eprintln!("zns serve: {name}: queue {qid}: {e}");
            return;
        }
    };
    let exe = Rc::new(smol::LocalExecutor::new());
    let mut tasks = Vec::new();
    for tag in 0..dev.dev_info.queue_depth {
        let q = q.clone();
        let link = link.clone();
        let name = name.to_string();
        tasks.push(exe.spawn(async move {
            if let Err(e) = serve_tag(&q, tag, &link, lba_bytes, &name).await {
                if !matches!(e, UblkError::QueueIsDown) {
                    eprintln!("zns serve: {name}: tag {tag}: {e}");
                }
            }
        }));
    }
    let run = exe.clone();
    smol::block_on(exe.run(async move {
        let run_ops = || while run.try_tick() {};
        let done = || tasks.iter().all(|t| t.is_finished());
        if let Err(e) = libublk::wait_and_handle_io_events(&q, Some(20), run_ops, done).await {
            eprintln!("zns serve: queue {qid}: {e}");
        }
    }));
}

/// One tag's loop: fetch a request, serve it, commit its result.
async fn serve_tag(
    q: &UblkQueue<'_>,
    tag: u16,
    link: &Link,
    lba_bytes: u64,
    name: &str,
) -> Result<(), UblkError> {
    let cdev = q.dev.tgt.fds[0];
    let slot = Arc::new(Slot::new().map_err(UblkError::IOError)?);
    q.submit_io_prep_cmd(tag, BufDesc::Slice(&[]), 0, None)
        .await?;
    loop {
        let iod = IoDesc::from(q.get_iod(tag));
        let pos = UblkIOCtx::ublk_user_copy_pos(q.get_qid(), tag, 0);
        let (result, append_sector) = match decode(&iod, lba_bytes) {
            Err(e) => (-e.errno(), None),
            Ok(req) => {
                let outcome = serve_request(q, cdev, pos, req, link, &slot, lba_bytes).await;
                match outcome {
                    Ok(done) => (done.result_bytes as i32, done.append_sector),
                    Err(f) => {
                        log_failure(name, &req, &f);
                        (-f.errno, None)
                    }
                }
            }
        };
        let desc = match append_sector {
            Some(sector) => BufDesc::ZonedAppendLba(sector),
            None => BufDesc::Slice(&[]),
        };
        q.submit_io_commit_cmd(tag, desc, result).await?;
    }
}

async fn serve_request(
    q: &UblkQueue<'_>,
    cdev: RawFd,
    pos: u64,
    req: Request,
    link: &Link,
    slot: &Arc<Slot>,
    lba_bytes: u64,
) -> Result<Done, Failure> {
    let mut payload = vec![0u8; req.payload_in_bytes(lba_bytes) as usize];
    if !payload.is_empty() {
        copy_from_kernel(cdev, &mut payload, pos).map_err(|_| Failure::errno(libc::EIO))?;
    }
    let completer = slot.clone();
    link.submit(req, payload, move |result| completer.complete(result));
    let done = slot.wait(q).await?;
    if !done.data_out.is_empty() {
        copy_to_kernel(cdev, &done.data_out, pos).map_err(|_| Failure::errno(libc::EIO))?;
    }
    Ok(done)
}

fn log_failure(name: &str, req: &Request, f: &Failure) {
    match f.status {
        Some(status) => eprintln!(
            "zns serve: {name}: {} at LBA {}: {status} -> errno {}",
            req.name(),
            req.lba(),
            f.errno
        ),
        None => eprintln!(
            "zns serve: {name}: {} at LBA {}: errno {}",
            req.name(),
            req.lba(),
            f.errno
        ),
    }
}

/// A tag's handover point: the runtime thread stores the result and writes
/// the eventfd; the tag's task reads the eventfd through its queue's ring.
struct Slot {
    efd: OwnedFd,
    result: Mutex<Option<Result<Done, Failure>>>,
}

impl Slot {
    fn new() -> std::io::Result<Slot> {
        // SAFETY: eventfd takes two integers and returns a new descriptor.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Slot {
            // SAFETY: `fd` is a fresh descriptor owned by nobody else.
            efd: unsafe { OwnedFd::from_raw_fd(fd) },
            result: Mutex::new(None),
        })
    }

    /// On the runtime thread.
    fn complete(&self, result: Result<Done, Failure>) {
        *self.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to our eventfd.
        unsafe { libc::write(self.efd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// On the queue thread: until `complete` has run.
    async fn wait(&self, q: &UblkQueue<'_>) -> Result<Done, Failure> {
        loop {
            if let Some(r) = self
                .result
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                return r;
            }
            let mut counter = [0u8; 8];
            let sqe = io_uring::opcode::Read::new(
                io_uring::types::Fd(self.efd.as_raw_fd()),
                counter.as_mut_ptr(),
                counter.len() as u32,
            )
            .build();
            let res = q.ublk_submit_sqe(sqe).await;
            if res < 0 && res != -libc::EINTR && res != -libc::EAGAIN {
                return Err(Failure::errno(-res));
            }
        }
    }
}

/// Reads a request's data from the kernel (user copy).
fn copy_from_kernel(cdev: RawFd, buf: &mut [u8], pos: u64) -> std::io::Result<()> {
    let len = buf.len();
    let ptr = buf.as_mut_ptr();
    whole(len, std::io::ErrorKind::UnexpectedEof, |done| {
        // SAFETY: reads into the unfilled tail of the live buffer `buf`.
        unsafe {
            libc::pread(
                cdev,
                ptr.add(done).cast(),
                len - done,
                (pos + done as u64) as libc::off_t,
            )
        }
    })
}

/// Writes a request's result data to the kernel (user copy).
fn copy_to_kernel(cdev: RawFd, buf: &[u8], pos: u64) -> std::io::Result<()> {
    whole(buf.len(), std::io::ErrorKind::WriteZero, |done| {
        // SAFETY: writes from the live buffer `buf`.
        unsafe {
            libc::pwrite(
                cdev,
                buf[done..].as_ptr().cast(),
                buf.len() - done,
                (pos + done as u64) as libc::off_t,
            )
        }
    })
}

/// Repeats a partial transfer (`step(bytes done so far)`, a system call's
/// return value) until `len` bytes are done; `zero` names a transfer of 0.
fn whole(
    len: usize,
    zero: std::io::ErrorKind,
    mut step: impl FnMut(usize) -> isize,
) -> std::io::Result<()> {
    let mut done = 0;
    while done < len {
        let n = step(done);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n == 0 {
            return Err(zero.into());
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::char_device_in_use;

    #[test]
    fn a_file_held_open_is_in_use() {
        let dir = std::env::temp_dir().join(format!("zns-serve-inuse-{}", std::process::id()));
        std::fs::write(&dir, b"x").unwrap();
        let path = dir.to_str().unwrap().to_string();
        assert!(!char_device_in_use(&path));
        let held = std::fs::File::open(&dir).unwrap();
        assert!(char_device_in_use(&path));
        drop(held);
        assert!(!char_device_in_use(&path));
        std::fs::remove_file(&dir).unwrap();
    }
}
