//! The ZRAID paper (zraid-asplos25) reproduced: `emulated` runs Figs. 7,
//! 8, 11 and the flash WAF per variant as job lists in virtual time;
//! `apps` runs Figs. 9 and 10 (and the §6.4 statistics) with real
//! applications on served arrays; `dbcheck` checks that method against the
//! drive's own db_bench figures; `launch` runs the application figures
//! here or in the ublk guest (docs/raid.md, docs/apps.md).

pub mod apps;
pub mod dbcheck;
pub mod emulated;
pub mod launch;
