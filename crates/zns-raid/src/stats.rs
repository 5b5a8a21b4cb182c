//! `RaidStats`: the counters of what the array wrote to its members (data,
//! parity, partial parity in its three places, WP logs, metadata, PP-log GC)
//! and the flash write amplification derived from them.

/// Counters of what the array wrote to its members, in blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RaidStats {
    /// Logical blocks written by the host.
    pub host_blocks: u64,
    pub data_blocks: u64,
    /// Full parity (and in-place partial parity of a stripe's last chunk).
    pub parity_blocks: u64,
    /// Partial parity written into the ZRWA (later overwritten: not permanent).
    pub pp_zrwa_blocks: u64,
    /// Partial parity logged in metadata zones near zone ends (permanent).
    pub pp_md_blocks: u64,
    /// WP-log entries written (each copy counts).
    pub wplog_blocks: u64,
    /// Every block appended to metadata zones (headers included).
    pub md_blocks: u64,
    pub zrwa_flushes: u64,
    pub member_flushes: u64,
    pub degraded_reads: u64,
    /// Partial parity appended to PP log zones (RAIZN and the ablation
    /// variants; permanent).
    pub pp_log_blocks: u64,
    /// Metadata header blocks of those PP log records (permanent).
    pub pp_header_blocks: u64,
    /// PP log zones garbage-collected (switched, the old one reset).
    pub pp_gc_count: u64,
    /// Blocks GC re-appended (partial stripes of open zones) to the new PP log zone.
    pub pp_gc_blocks: u64,
}

/// Counters of several runs, summed.
impl std::ops::AddAssign for RaidStats {
    fn add_assign(&mut self, o: RaidStats) {
        let RaidStats {
            host_blocks,
            data_blocks,
            parity_blocks,
            pp_zrwa_blocks,
            pp_md_blocks,
            wplog_blocks,
            md_blocks,
            zrwa_flushes,
            member_flushes,
            degraded_reads,
            pp_log_blocks,
            pp_header_blocks,
            pp_gc_count,
            pp_gc_blocks,
        } = o;
        self.host_blocks += host_blocks;
        self.data_blocks += data_blocks;
        self.parity_blocks += parity_blocks;
        self.pp_zrwa_blocks += pp_zrwa_blocks;
        self.pp_md_blocks += pp_md_blocks;
        self.wplog_blocks += wplog_blocks;
        self.md_blocks += md_blocks;
        self.zrwa_flushes += zrwa_flushes;
        self.member_flushes += member_flushes;
        self.degraded_reads += degraded_reads;
        self.pp_log_blocks += pp_log_blocks;
        self.pp_header_blocks += pp_header_blocks;
        self.pp_gc_count += pp_gc_count;
        self.pp_gc_blocks += pp_gc_blocks;
    }
}

impl RaidStats {
    /// Blocks programmed permanently into member flash: data, full parity,
    /// everything appended to metadata and PP log zones. PP and WP-log entries
    /// in the ZRWA are overwritten by later data and never reach the flash.
    pub fn flash_blocks(&self) -> u64 {
        self.data_blocks
            + self.parity_blocks
            + self.md_blocks
            + self.pp_log_blocks
            + self.pp_header_blocks
            + self.pp_gc_blocks
    }
    /// Partial parity that stays in flash (the paper's "permanent PP",
    /// §6.4): logged near zone ends (ZRAID), appended to PP log zones and
    /// re-appended by their GC (RAIZN and the ablation variants).
    pub fn permanent_pp_blocks(&self) -> u64 {
        self.pp_md_blocks + self.pp_log_blocks + self.pp_gc_blocks
    }
    /// Partial parity written into the ZRWA and overwritten by later data
    /// (the paper's "temporary PP"): it never reaches the flash.
    pub fn temporary_pp_blocks(&self) -> u64 {
        self.pp_zrwa_blocks
    }
    /// Every partial-parity-related block written to members: PP, temporary
    /// or permanent, and the metadata headers of logged PP (the paper's
    /// "PP-related writes", −24 % for ZRAID against RAIZN+).
    pub fn pp_related_blocks(&self) -> u64 {
        self.permanent_pp_blocks() + self.temporary_pp_blocks() + self.pp_header_blocks
    }
    /// Every block written to a member (including ZRWA overwrites).
    pub fn member_write_blocks(&self) -> u64 {
        self.flash_blocks() + self.pp_zrwa_blocks + self.wplog_blocks
    }
    /// Flash write amplification: permanent member blocks per host block
    /// (the paper's "flash WAF", §6.4; 1.25 is full parity alone with 4 + 1).
    pub fn flash_waf(&self) -> f64 {
        if self.host_blocks == 0 {
            return 0.0;
        }
        self.flash_blocks() as f64 / self.host_blocks as f64
    }
}
