//! A connection to the device server, as one fio job (or fio's main process,
//! for the zone report) uses it: I/O is queued into a batch, sent on commit,
//! and completions are reaped as fio's `getevents` asks; zone commands and
//! the region mapping are synchronous round trips on the same connection
//! (completions that arrive meanwhile are kept for the next reap).

use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};

use zns_core::NvmeStatus;

use crate::proto::{Geometry, Op, Request, Response, Zone, RESPONSE_BYTES, ZONE_BYTES};
use crate::server::send_all;
use crate::shm::{self, Region};

/// Tags of synchronous commands have the top bit set (I/O tags are fio
/// `io_u` addresses, user-space pointers, which never do).
const CONTROL_TAG: u64 = 1 << 63;

/// One finished I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub tag: u64,
    /// 0 or a positive errno.
    pub errno: i32,
    pub nvme_status: u16,
}

/// What a queued I/O does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoKind {
    Read,
    Write,
    Flush,
}

/// A client connection.
pub struct Client {
    stream: UnixStream,
    geometry: Geometry,
    region: Option<Region>,
    outbox: Vec<u8>,
    /// Received bytes not parsed yet (from `inbox_pos`).
    inbox: Vec<u8>,
    inbox_pos: usize,
    /// Receive buffer (responses are copied from it into `inbox`).
    scratch: Box<[u8]>,
    done: VecDeque<Completion>,
    /// The completions handed out by the last [`Client::reap`].
    events: Vec<Completion>,
    next_control: u64,
    pid: u32,
}

impl Client {
    /// Connects to the server listening on abstract socket `name` and reads
    /// the device geometry it greets with.
    pub fn connect(name: &str) -> io::Result<Client> {
        let addr = SocketAddr::from_abstract_name(name.as_bytes())?;
        let stream = UnixStream::connect_addr(&addr)?;
        let mut client = Client {
            stream,
            geometry: Geometry::default(),
            region: None,
            outbox: Vec::new(),
            inbox: Vec::new(),
            inbox_pos: 0,
            scratch: vec![0u8; 64 * 1024].into_boxed_slice(),
            done: VecDeque::new(),
            events: Vec::new(),
            next_control: 0,
            pid: std::process::id(),
        };
        let (resp, payload) = client.next_message(true)?.ok_or_else(eof)?;
        client.geometry = Geometry::decode(&payload)
            .filter(|_| resp.tag == 0)
            .ok_or_else(|| bad_data("the server's greeting is not a geometry"))?;
        Ok(client)
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The process that opened the connection (a forked child must not use
    /// its parent's connection).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Allocates the shared I/O memory (`len_bytes`) and maps it in the
    /// server too; returns its base address.
    pub fn alloc_region(&mut self, len_bytes: usize) -> io::Result<*mut u8> {
        let region = Region::create(len_bytes)?;
        let tag = self.control_tag();
        let mut req = Request::new(Op::MapRegion, tag);
        req.len_bytes = region.len_bytes() as u64;
        let mut bytes = Vec::new();
        req.encode(&mut bytes);
        shm::send_with_fd(&self.stream, &bytes, region.fd())?;
        let resp = self.wait_for(tag)?.0;
        if resp.errno != 0 {
            return Err(io::Error::from_raw_os_error(resp.errno));
        }
        let base = region.as_ptr();
        self.region = Some(region);
        Ok(base)
    }

    /// Releases the shared region (only when no I/O is in flight).
    pub fn free_region(&mut self) {
        self.region = None;
    }

    /// Queues one I/O of `len_bytes` at device offset `offset_bytes` with
    /// the buffer at `buf` (inside the shared region); sent by
    /// [`Client::commit`]. A request that cannot be valid fails here with an
    /// errno.
    pub fn queue(
        &mut self,
        tag: u64,
        kind: IoKind,
        offset_bytes: u64,
        len_bytes: u64,
        buf: *const u8,
    ) -> Result<(), i32> {
        if tag & CONTROL_TAG != 0 {
            return Err(libc::EINVAL);
        }
        let mut req = match kind {
            IoKind::Read => Request::new(Op::Read, tag),
            IoKind::Write => Request::new(Op::Write, tag),
            IoKind::Flush => Request::new(Op::Flush, tag),
        };
        if kind != IoKind::Flush {
            let region = self.region.as_ref().ok_or(libc::EFAULT)?;
            let offset = (buf as usize).wrapping_sub(region.as_ptr() as usize) as u64;
            if (buf as usize) < region.as_ptr() as usize || !region.contains(offset, len_bytes) {
                return Err(libc::EFAULT);
            }
            req.offset_bytes = offset_bytes;
            req.len_bytes = len_bytes;
            req.region_offset = offset;
        }
        req.encode(&mut self.outbox);
        Ok(())
    }

    /// Sends everything queued since the last commit.
    pub fn commit(&mut self) -> io::Result<()> {
        if self.outbox.is_empty() {
            return Ok(());
        }
        let result = send_all(&self.stream, &self.outbox);
        self.outbox.clear();
        result
    }

    /// Waits for at least `min` completions (at most `max` are taken), for at
    /// most `timeout_ms` (negative: no limit); returns how many
    /// [`Client::event`] can hand out.
    pub fn reap(&mut self, min: usize, max: usize, timeout_ms: i32) -> io::Result<usize> {
        self.events.clear();
        loop {
            while self.events.len() < max {
                match self.done.pop_front() {
                    Some(c) => self.events.push(c),
                    None => break,
                }
            }
            if self.events.len() >= max {
                break;
            }
            // Take whatever has arrived without waiting; wait only while
            // fewer than `min` are in hand.
            let block = self.events.len() < min;
            match self.next_message_timeout(if block { timeout_ms } else { 0 })? {
                Some((resp, _)) => self.stash(resp),
                None => break,
            }
        }
        Ok(self.events.len())
    }

    /// Completion `idx` of the last reap.
    pub fn event(&self, idx: usize) -> Option<Completion> {
        self.events.get(idx).copied()
    }

    /// Reports at most `max_zones` zones from the zone holding `offset_bytes`.
    pub fn report_zones(&mut self, offset_bytes: u64, max_zones: u32) -> Result<Vec<Zone>, i32> {
        let tag = self.control_tag();
        let mut req = Request::new(Op::Report, tag);
        req.offset_bytes = offset_bytes;
        req.count = max_zones;
        let (resp, payload) = self.round_trip(req)?;
        if resp.errno != 0 {
            log_failure("report zones", offset_bytes, 0, resp);
            return Err(resp.errno);
        }
        Ok(payload.chunks_exact(ZONE_BYTES).map(Zone::decode).collect())
    }

    /// Resets (or, with `finish`, finishes) the zones of a byte range.
    pub fn zone_range(
        &mut self,
        finish: bool,
        offset_bytes: u64,
        len_bytes: u64,
    ) -> Result<(), i32> {
        let tag = self.control_tag();
        let op = if finish { Op::Finish } else { Op::Reset };
        let mut req = Request::new(op, tag);
        req.offset_bytes = offset_bytes;
        req.len_bytes = len_bytes;
        let (resp, _) = self.round_trip(req)?;
        if resp.errno != 0 {
            let what = if finish { "zone finish" } else { "zone reset" };
            log_failure(what, offset_bytes, len_bytes, resp);
            return Err(resp.errno);
        }
        Ok(())
    }

    fn control_tag(&mut self) -> u64 {
        self.next_control += 1;
        CONTROL_TAG | self.next_control
    }

    fn round_trip(&mut self, req: Request) -> Result<(Response, Vec<u8>), i32> {
        let mut bytes = Vec::new();
        req.encode(&mut bytes);
        let sent = send_all(&self.stream, &bytes).and_then(|()| self.wait_for(req.tag));
        sent.map_err(|e| {
            eprintln!("znskit-fio: lost the device server: {e}");
            libc::EIO
        })
    }

    /// Reads until the response to control command `tag` arrives, keeping
    /// I/O completions for the next reap.
    fn wait_for(&mut self, tag: u64) -> io::Result<(Response, Vec<u8>)> {
        loop {
            let (resp, payload) = self.next_message(true)?.ok_or_else(eof)?;
            if resp.tag == tag {
                return Ok((resp, payload));
            }
            self.stash(resp);
        }
    }

    fn stash(&mut self, resp: Response) {
        if resp.tag & CONTROL_TAG != 0 {
            return; // a late answer to a control command nobody waits for
        }
        self.done.push_back(Completion {
            tag: resp.tag,
            errno: resp.errno,
            nvme_status: resp.nvme_status,
        });
    }

    fn next_message(&mut self, block: bool) -> io::Result<Option<(Response, Vec<u8>)>> {
        self.next_message_timeout(if block { -1 } else { 0 })
    }

    /// The next whole message, waiting up to `timeout_ms` for data to arrive
    /// (negative: forever); `None` when none arrived in time.
    fn next_message_timeout(&mut self, timeout_ms: i32) -> io::Result<Option<(Response, Vec<u8>)>> {
        loop {
            if let Some(msg) = self.parse_one()? {
                return Ok(Some(msg));
            }
            if !self.fill(timeout_ms)? {
                return Ok(None);
            }
        }
    }

    fn parse_one(&mut self) -> io::Result<Option<(Response, Vec<u8>)>> {
        let avail = &self.inbox[self.inbox_pos..];
        if avail.len() < RESPONSE_BYTES {
            return Ok(None);
        }
        let header: &[u8; RESPONSE_BYTES] = avail[..RESPONSE_BYTES]
            .try_into()
            .map_err(|_| bad_data("short header"))?;
        let resp = Response::decode(header);
        let total = RESPONSE_BYTES + resp.payload_bytes as usize;
        if avail.len() < total {
            return Ok(None);
        }
        let payload = avail[RESPONSE_BYTES..total].to_vec();
        self.inbox_pos += total;
        if self.inbox_pos == self.inbox.len() {
            self.inbox.clear();
            self.inbox_pos = 0;
        }
        Ok(Some((resp, payload)))
    }

    /// Reads what the socket has after waiting up to `timeout_ms` for it;
    /// false on timeout.
    fn fill(&mut self, timeout_ms: i32) -> io::Result<bool> {
        let fd = self.stream.as_raw_fd();
        // A bounded wait needs poll; "forever" is a blocking receive and
        // "not at all" a non-blocking one (one system call each).
        if timeout_ms > 0 {
            loop {
                let mut pfd = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
                if n < 0 {
                    let err = io::Error::last_os_error();
                    if err.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    return Err(err);
                }
                if n == 0 {
                    return Ok(false);
                }
                break;
            }
        }
        let flags = if timeout_ms == 0 {
            libc::MSG_DONTWAIT
        } else {
            0
        };
        let n = loop {
            // SAFETY: reading into our scratch buffer.
            let n = unsafe {
                libc::recv(
                    fd,
                    self.scratch.as_mut_ptr().cast(),
                    self.scratch.len(),
                    flags,
                )
            };
            if n < 0 {
                let err = io::Error::last_os_error();
                match err.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock if timeout_ms == 0 => return Ok(false),
                    _ => return Err(err),
                }
            }
            break n as usize;
        };
        if n == 0 {
            return Err(eof());
        }
        if self.inbox_pos > 0 {
            self.inbox.drain(..self.inbox_pos);
            self.inbox_pos = 0;
        }
        self.inbox.extend_from_slice(&self.scratch[..n]);
        Ok(true)
    }
}

/// Prints a failed command to stderr, naming the NVMe status behind it.
pub fn log_failure(what: &str, offset_bytes: u64, len_bytes: u64, resp: Response) {
    eprintln!(
        "znskit-fio: {what} at offset {offset_bytes} ({len_bytes} bytes) failed: {} ({})",
        describe_status(resp.nvme_status),
        io::Error::from_raw_os_error(resp.errno)
    );
}

/// "NVMe status <name> (0x…)" for a status code, or a note that the request
/// failed before reaching the device.
pub fn describe_status(code: u16) -> String {
    if code == 0 {
        return "rejected before reaching the device".into();
    }
    match NvmeStatus::ALL.iter().find(|s| s.code() == code) {
        Some(s) => format!("NVMe status {s}"),
        None => format!("NVMe status 0x{code:03x}"),
    }
}

fn eof() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the device server closed the connection",
    )
}

fn bad_data(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}
