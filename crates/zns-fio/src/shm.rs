//! Shared memory between a fio job and the device server: a memfd mapped
//! MAP_SHARED by both, holding the job's I/O buffers (the engine allocates
//! fio's buffers there through `iomem_alloc`), and the SCM_RIGHTS fd passing
//! that hands the memfd to the server. The device reads into and writes from
//! the region directly, so data is never copied through the socket.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// A MAP_SHARED mapping of a memfd, unmapped on drop.
pub struct Region {
    ptr: *mut u8,
    len_bytes: usize,
    fd: OwnedFd,
}

// SAFETY: the region is plain shared memory; who may touch which bytes when
// is the protocol's business (a buffer belongs to the server from the request
// until its response), not the pointer's.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

impl Region {
    /// A new zero-filled region of `len_bytes` (rounded up to a page).
    pub fn create(len_bytes: usize) -> io::Result<Region> {
        let page = page_bytes();
        let len_bytes = len_bytes.max(1).div_ceil(page) * page;
        let name = c"znskit-fio";
        // SAFETY: plain syscall with a valid NUL-terminated name.
        let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: valid fd; the length fits off_t on 64-bit Linux.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len_bytes as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Region::map(fd, len_bytes)
    }

    /// Maps `len_bytes` of the memfd `fd` (received from a client).
    pub fn map(fd: OwnedFd, len_bytes: usize) -> io::Result<Region> {
        if len_bytes == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "empty shared region",
            ));
        }
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid fd and a stat buffer of the right type.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if (st.st_size as u64) < len_bytes as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "shared region is {} bytes, {len_bytes} announced",
                    st.st_size
                ),
            ));
        }
        // SAFETY: a fresh shared mapping of a file we hold open; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Region {
            ptr: ptr.cast(),
            len_bytes,
            fd,
        })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len_bytes(&self) -> usize {
        self.len_bytes
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Whether `[offset, offset + len)` lies inside the region.
    pub fn contains(&self, offset: u64, len: u64) -> bool {
        offset
            .checked_add(len)
            .is_some_and(|end| end <= self.len_bytes as u64)
    }

    /// The bytes `[offset, offset + len)`.
    ///
    /// # Safety
    /// The range must be inside the region (see [`Region::contains`]) and no
    /// other live slice may overlap it: the protocol gives a buffer to the
    /// server for the duration of one request.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut(&self, offset: u64, len: u64) -> &mut [u8] {
        std::slice::from_raw_parts_mut(self.ptr.add(offset as usize), len as usize)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping we created; nothing refers to it any
        // more (slices borrow the Region).
        unsafe {
            libc::munmap(self.ptr.cast(), self.len_bytes);
        }
    }
}

fn page_bytes() -> usize {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as usize
    } else {
        4096
    }
}

/// Sends `bytes` with `fd` attached (SCM_RIGHTS).
pub fn send_with_fd(stream: &UnixStream, bytes: &[u8], fd: RawFd) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: msg points at a control buffer of CMSG_SPACE(one fd) bytes.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
    }
    // SAFETY: every pointer in msg is valid for the call.
    let n = unsafe { libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != bytes.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "short sendmsg of a request with an fd",
        ));
    }
    Ok(())
}

/// Receives exactly `buf.len()` bytes; returns the fd attached to them, if
/// any. A closed connection is `UnexpectedEof`.
pub fn recv_with_fd(stream: &UnixStream, buf: &mut [u8]) -> io::Result<Option<OwnedFd>> {
    let mut got = 0;
    let mut fd = None;
    while got < buf.len() {
        let (n, f) = recv_some_with_fd(stream, &mut buf[got..])?;
        if f.is_some() {
            fd = f;
        }
        got += n;
    }
    Ok(fd)
}

/// One `recvmsg`: the bytes that have arrived (at least one; waits for
/// them) and the fd attached to them, if any. A closed connection is
/// `UnexpectedEof`.
pub fn recv_some_with_fd(
    stream: &UnixStream,
    buf: &mut [u8],
) -> io::Result<(usize, Option<OwnedFd>)> {
    loop {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: pure computation.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
        let mut control = vec![0u8; space];
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: every pointer in msg is valid for the call.
        let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        let mut fd = None;
        // SAFETY: walking the control messages the kernel filled in.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                    let raw = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
                    fd = Some(OwnedFd::from_raw_fd(raw));
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        return Ok((n as usize, fd));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_passed_over_a_socket_shares_its_bytes() {
        let region = Region::create(10_000).unwrap();
        assert_eq!(region.len_bytes() % 4096, 0);
        assert!(region.contains(0, region.len_bytes() as u64));
        assert!(!region.contains(1, region.len_bytes() as u64));
        assert!(!region.contains(u64::MAX, 2));
        let (a, b) = UnixStream::pair().unwrap();
        send_with_fd(&a, b"hello", region.fd()).unwrap();
        let mut got = [0u8; 5];
        let fd = recv_with_fd(&b, &mut got).unwrap().expect("an fd");
        assert_eq!(&got, b"hello");
        let other = Region::map(fd, region.len_bytes()).unwrap();
        unsafe {
            region.slice_mut(100, 3).copy_from_slice(b"abc");
            assert_eq!(other.slice_mut(100, 3), b"abc");
        }
        drop(a);
        let mut more = [0u8; 1];
        assert_eq!(
            recv_with_fd(&b, &mut more).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }
}
