//! Plain data types of the ZNS command set: zone states and descriptors, zone
//! management actions, report filters, and the namespace configuration the state
//! machine enforces. Values use the encodings of the NVMe ZNS specification
//! where one exists (zone state nibble, zone send action, report filter).

use serde::{Deserialize, Serialize};

use crate::status::NvmeStatus;

/// Zone state, encoded as in the zone descriptor (byte 1, bits 7:4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ZoneState {
    /// ZSE: empty.
    Empty,
    /// ZSIO: implicitly opened (by a write or append).
    ImplicitlyOpened,
    /// ZSEO: explicitly opened (by Zone Management Send Open).
    ExplicitlyOpened,
    /// ZSC: closed (active, not open).
    Closed,
    /// ZSRO: read only (controller initiated, fault).
    ReadOnly,
    /// ZSF: full.
    Full,
    /// ZSO: offline (controller initiated, fault).
    Offline,
}

impl ZoneState {
    pub const ALL: [ZoneState; 7] = [
        ZoneState::Empty,
        ZoneState::ImplicitlyOpened,
        ZoneState::ExplicitlyOpened,
        ZoneState::Closed,
        ZoneState::ReadOnly,
        ZoneState::Full,
        ZoneState::Offline,
    ];

    /// The 4-bit state value of the zone descriptor.
    pub fn code(self) -> u8 {
        match self {
            ZoneState::Empty => 0x1,
            ZoneState::ImplicitlyOpened => 0x2,
            ZoneState::ExplicitlyOpened => 0x3,
            ZoneState::Closed => 0x4,
            ZoneState::ReadOnly => 0xD,
            ZoneState::Full => 0xE,
            ZoneState::Offline => 0xF,
        }
    }

    /// Short name as the spec abbreviates it (ZSE, ZSIO, ...).
    pub fn abbrev(self) -> &'static str {
        match self {
            ZoneState::Empty => "ZSE",
            ZoneState::ImplicitlyOpened => "ZSIO",
            ZoneState::ExplicitlyOpened => "ZSEO",
            ZoneState::Closed => "ZSC",
            ZoneState::ReadOnly => "ZSRO",
            ZoneState::Full => "ZSF",
            ZoneState::Offline => "ZSO",
        }
    }

    /// The name nvme-cli's `zns report-zones` prints (EMPTY, IMP_OPENED, ...).
    pub fn nvme_cli_name(self) -> &'static str {
        match self {
            ZoneState::Empty => "EMPTY",
            ZoneState::ImplicitlyOpened => "IMP_OPENED",
            ZoneState::ExplicitlyOpened => "EXP_OPENED",
            ZoneState::Closed => "CLOSED",
            ZoneState::ReadOnly => "READONLY",
            ZoneState::Full => "FULL",
            ZoneState::Offline => "OFFLINE",
        }
    }

    /// Open = ZSIO or ZSEO (consumes an open resource).
    pub fn is_open(self) -> bool {
        matches!(
            self,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened
        )
    }

    /// Active = open or closed (consumes an active resource).
    pub fn is_active(self) -> bool {
        self.is_open() || self == ZoneState::Closed
    }
}

/// Zone type (descriptor byte 0). NVMe ZNS defines only sequential-write-required
/// (2h); randomly writable space is offered as a separate conventional namespace
/// (as the ZN540 does), not as conventional zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ZoneType {
    SequentialWriteRequired,
}

impl ZoneType {
    pub fn code(self) -> u8 {
        match self {
            ZoneType::SequentialWriteRequired => 0x2,
        }
    }
}

/// Zone attributes (descriptor byte 2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ZoneAttributes {
    /// ZFC: zone finished by controller.
    pub finished_by_controller: bool,
    /// ZRWAV: a ZRWA is allocated to the zone.
    pub zrwa_valid: bool,
}

/// One zone as Zone Management Receive reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ZoneDescriptor {
    pub zone_type: ZoneType,
    pub state: ZoneState,
    pub attributes: ZoneAttributes,
    /// Zone start LBA (ZSLBA).
    pub start_lba: u64,
    /// Writable capacity (ZCAP), in LBAs.
    pub capacity_lbas: u64,
    /// Write pointer (absolute LBA). For Full, ReadOnly and Offline zones the spec
    /// says the WP is not valid; we report `start_lba + capacity_lbas` for Full and
    /// the last known value for ReadOnly/Offline (the `wp_valid` helper says which).
    pub write_pointer: u64,
}

impl ZoneDescriptor {
    /// Whether the WP field is meaningful in this state.
    pub fn wp_valid(&self) -> bool {
        !matches!(
            self.state,
            ZoneState::Full | ZoneState::ReadOnly | ZoneState::Offline
        )
    }
    /// LBAs written so far (0 for an offline zone).
    pub fn written_lbas(&self) -> u64 {
        self.write_pointer.saturating_sub(self.start_lba)
    }
}

/// Zone Management Send action (CDW13 ZSA) with its flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ZoneAction {
    /// 01h Close Zone.
    Close,
    /// 02h Finish Zone.
    Finish,
    /// 03h Open Zone; `zrwa` = the ZRWAA bit (allocate a ZRWA).
    Open { zrwa: bool },
    /// 04h Reset Zone.
    Reset,
    /// 05h Offline Zone (only from ZSRO).
    Offline,
    /// 11h Flush Explicit ZRWA Range: the command's SLBA is the last LBA to commit.
    FlushZrwa,
}

impl ZoneAction {
    /// The ZSA value.
    pub fn code(self) -> u8 {
        match self {
            ZoneAction::Close => 0x01,
            ZoneAction::Finish => 0x02,
            ZoneAction::Open { .. } => 0x03,
            ZoneAction::Reset => 0x04,
            ZoneAction::Offline => 0x05,
            ZoneAction::FlushZrwa => 0x11,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ZoneAction::Close => "close",
            ZoneAction::Finish => "finish",
            ZoneAction::Open { zrwa: false } => "open",
            ZoneAction::Open { zrwa: true } => "open-zrwa",
            ZoneAction::Reset => "reset",
            ZoneAction::Offline => "offline",
            ZoneAction::FlushZrwa => "zrwa-flush",
        }
    }
}

/// A Zone Management Send command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ZoneSendCmd {
    pub action: ZoneAction,
    /// SLBA: the zone's start LBA (or, for FlushZrwa, the last LBA to commit).
    /// Ignored when `select_all` is set.
    pub slba: u64,
    /// Select All (CDW13 bit 8). Invalid (Invalid Field) for FlushZrwa.
    pub select_all: bool,
}

/// Zone Management Receive report filter (ZRASF).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReportFilter {
    #[default]
    All,
    Empty,
    ImplicitlyOpened,
    ExplicitlyOpened,
    Closed,
    Full,
    ReadOnly,
    Offline,
}

impl ReportFilter {
    pub fn matches(self, state: ZoneState) -> bool {
        match self {
            ReportFilter::All => true,
            ReportFilter::Empty => state == ZoneState::Empty,
            ReportFilter::ImplicitlyOpened => state == ZoneState::ImplicitlyOpened,
            ReportFilter::ExplicitlyOpened => state == ZoneState::ExplicitlyOpened,
            ReportFilter::Closed => state == ZoneState::Closed,
            ReportFilter::Full => state == ZoneState::Full,
            ReportFilter::ReadOnly => state == ZoneState::ReadOnly,
            ReportFilter::Offline => state == ZoneState::Offline,
        }
    }
}

/// ZRWA capability of a zoned namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZrwaConfig {
    /// ZRWASZ: size of the ZRWA (and of the implicit flush region), in LBAs.
    pub size_lbas: u64,
    /// ZRWAFG: flush granularity, in LBAs. `size_lbas` is a multiple of it.
    pub flush_granularity_lbas: u64,
    /// NUMZRWA: how many zones can hold a ZRWA at once.
    pub resources: u32,
}

/// Everything the ZNS state machine enforces for one zoned namespace.
/// (Deserialized from device profiles: unknown keys are errors; the optional
/// keys default to: ZASL = MDTS, auto-close on, no cross-zone reads, no ZRWA.)
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZonedConfig {
    /// Logical block size in bytes (LBA format).
    pub lba_bytes: u32,
    /// Number of zones.
    pub zone_count: u32,
    /// Zone size (ZSZE), in LBAs.
    pub zone_size_lbas: u64,
    /// Zone capacity (ZCAP), in LBAs; ≤ zone size.
    pub zone_capacity_lbas: u64,
    /// MOR + 1; 0 = no limit.
    pub max_open_zones: u32,
    /// MAR + 1; 0 = no limit.
    pub max_active_zones: u32,
    /// Largest data transfer of one I/O (MDTS), in LBAs.
    pub max_transfer_lbas: u32,
    /// Zone append size limit (ZASL), in LBAs; 0 = same as `max_transfer_lbas`.
    #[serde(default)]
    pub zone_append_limit_lbas: u32,
    /// When a write/append/open needs an open resource and none is left, close the
    /// implicitly opened zone that was opened longest ago (QEMU `auto_transition`).
    #[serde(default = "default_true")]
    pub auto_close_implicit: bool,
    /// OZCS.RAZB: reads may span zone boundaries.
    #[serde(default)]
    pub read_across_zone_boundary: bool,
    /// ZRWA support, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zrwa: Option<ZrwaConfig>,
}

fn default_true() -> bool {
    true
}

impl ZonedConfig {
    /// Total LBAs of the namespace (zone_count × zone size).
    pub fn total_lbas(&self) -> u64 {
        self.zone_count as u64 * self.zone_size_lbas
    }

    /// The effective append limit in LBAs.
    pub fn append_limit_lbas(&self) -> u32 {
        if self.zone_append_limit_lbas == 0 {
            self.max_transfer_lbas
        } else {
            self.zone_append_limit_lbas
        }
    }

    /// Checks the configuration; the error names the offending field.
    pub fn validate(&self) -> Result<(), InvalidZoneConfig> {
        self.check_fields().map_err(InvalidZoneConfig)
    }

    fn check_fields(&self) -> Result<(), String> {
        if !self.lba_bytes.is_power_of_two() || !(512..=65536).contains(&self.lba_bytes) {
            return Err(format!(
                "lba_bytes = {}: must be a power of two in 512..=65536",
                self.lba_bytes
            ));
        }
        if self.zone_count == 0 {
            return Err("zone_count = 0: a zoned namespace needs at least one zone".into());
        }
        if self.zone_size_lbas == 0 {
            return Err("zone_size_lbas = 0: zones must hold at least one LBA".into());
        }
        if self.zone_capacity_lbas == 0 || self.zone_capacity_lbas > self.zone_size_lbas {
            return Err(format!(
                "zone_capacity_lbas = {}: must be in 1..=zone_size_lbas ({})",
                self.zone_capacity_lbas, self.zone_size_lbas
            ));
        }
        if (self.zone_count as u64)
            .checked_mul(self.zone_size_lbas)
            .is_none()
        {
            return Err("zone_count × zone_size_lbas overflows 64 bits".into());
        }
        if self.max_active_zones != 0 && self.max_open_zones > self.max_active_zones {
            return Err(format!(
                "max_open_zones = {} exceeds max_active_zones = {}",
                self.max_open_zones, self.max_active_zones
            ));
        }
        if self.max_active_zones != 0 && self.max_open_zones == 0 {
            return Err("max_open_zones = 0 (unlimited) with a finite max_active_zones: open zones are active, so the open limit must be ≤ the active limit".into());
        }
        if self.max_transfer_lbas == 0 {
            return Err("max_transfer_lbas = 0: must allow at least one LBA per command".into());
        }
        if self.zone_append_limit_lbas > self.max_transfer_lbas {
            return Err(format!(
                "zone_append_limit_lbas = {} exceeds max_transfer_lbas = {}",
                self.zone_append_limit_lbas, self.max_transfer_lbas
            ));
        }
        if let Some(z) = &self.zrwa {
            if z.flush_granularity_lbas == 0 {
                return Err("zrwa.flush_granularity_lbas = 0: must be at least one LBA".into());
            }
            if z.size_lbas == 0 || z.size_lbas % z.flush_granularity_lbas != 0 {
                return Err(format!(
                    "zrwa.size_lbas = {}: must be a non-zero multiple of flush_granularity_lbas ({})",
                    z.size_lbas, z.flush_granularity_lbas
                ));
            }
            if z.size_lbas > self.zone_capacity_lbas {
                return Err(format!(
                    "zrwa.size_lbas = {} exceeds zone_capacity_lbas = {}",
                    z.size_lbas, self.zone_capacity_lbas
                ));
            }
            if z.resources == 0 {
                return Err("zrwa.resources = 0: omit [zrwa] to disable ZRWA".into());
            }
        }
        Ok(())
    }
}

/// A status-carrying result of the pure state machine.
pub type ZnsResult<T> = Result<T, NvmeStatus>;

/// A zoned namespace's configuration, or a zone table restored for it, that
/// cannot be: the message names the field (and the zone).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
#[non_exhaustive]
pub struct InvalidZoneConfig(pub String);
