//! Tests that judge time (rates, durations, "stops within N seconds") run alone: they take this lock for
//! writing, every other test of the binary for reading, so no other test competes with them for the cores.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static CLOCK: RwLock<()> = RwLock::new(());

/// Held by a test that judges time: no other test of the binary runs meanwhile.
pub fn alone() -> RwLockWriteGuard<'static, ()> {
    CLOCK.write().unwrap_or_else(|p| p.into_inner())
}

/// Held by a test that may run beside others but not beside one that runs alone.
pub fn shared() -> RwLockReadGuard<'static, ()> {
    CLOCK.read().unwrap_or_else(|p| p.into_inner())
}
