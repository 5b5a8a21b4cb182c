//! The Linux ublk UAPI as Rust declarations: the control and I/O command
//! structures, flags and ioctl numbers of `include/uapi/linux/ublk_cmd.h`
//! and the zone types of `linux/blkzoned.h`, for libublk (which zns-serve
//! uses). It stands in for crates.io's `libublk-rs-sys` of the same version
//! (the workspace's `[patch.crates-io]`): that crate runs bindgen at build
//! time, which needs libclang; here the same bindgen output is generated
//! once by `scripts/gen-ublk-bindings` and kept in `ublk_cmd.rs`, so a fresh
//! machine builds `zns` with nothing but cargo (docs/serve.md, "The ublk
//! bindings"). The bindings are for x86_64 Linux, the platform the project
//! builds on; regenerate them on another architecture.
#![allow(non_upper_case_globals)]
#![allow(non_camel_case_types)]
#![allow(non_snake_case)]
#![allow(dead_code)]
#![allow(clippy::all)]

include!("ublk_cmd.rs");

/// The `ublk_auto_buf_reg` an io_uring SQE's `addr` field carries for
/// `UBLK_F_AUTO_BUF_REG`: bits 0–15 the buffer index, 16–23 the flags (the
/// reserved bits are not carried back).
#[inline]
pub fn ublk_sqe_addr_to_auto_buf_reg(sqe_addr: u64) -> ublk_auto_buf_reg {
    ublk_auto_buf_reg {
        index: (sqe_addr & 0xffff) as u16,
        flags: ((sqe_addr >> 16) & 0xff) as u8,
        ..Default::default()
    }
}

/// The SQE `addr` value for an `ublk_auto_buf_reg`: index in bits 0–15,
/// flags in 16–23, `reserved0` in 24–31, `reserved1` in 32–63.
#[inline]
pub fn ublk_auto_buf_reg_to_sqe_addr(reg: &ublk_auto_buf_reg) -> u64 {
    u64::from(reg.index)
        | u64::from(reg.flags) << 16
        | u64::from(reg.reserved0) << 24
        | u64::from(reg.reserved1) << 32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_buf_reg_packs_each_field_into_its_bits() {
        let reg = ublk_auto_buf_reg {
            index: 0x0102,
            flags: 0x34,
            reserved0: 0x56,
            reserved1: 0x789a_bcde,
        };
        let addr = ublk_auto_buf_reg_to_sqe_addr(&reg);
        assert_eq!(addr, 0x789a_bcde_5634_0102);
        let back = ublk_sqe_addr_to_auto_buf_reg(addr);
        assert_eq!(
            (back.index, back.flags, back.reserved0, back.reserved1),
            (0x0102, 0x34, 0, 0)
        );
    }

    #[test]
    fn the_kept_bindings_match_the_kernel_abi() {
        // values fixed by the kernel's UAPI (ublk_cmd.h): a stale or
        // hand-edited ublk_cmd.rs fails here
        assert_eq!(core::mem::size_of::<ublksrv_ctrl_cmd>(), 32);
        assert_eq!(core::mem::size_of::<ublksrv_io_desc>(), 24);
        assert_eq!(core::mem::size_of::<ublksrv_io_cmd>(), 16);
        assert_eq!(UBLK_U_CMD_ADD_DEV, 0xc020_7504);
        assert_eq!(UBLK_U_IO_FETCH_REQ, 0xc010_7520);
        assert_eq!(UBLK_IO_OP_ZONE_APPEND, 13);
        assert_eq!(UBLK_F_ZONED, 1 << 8);
    }
}
