//! A counting global allocator for in-process allocation tests. A test file that wants it declares
//! `#[global_allocator] static A: Counting = Counting;` itself, so the other test binaries keep the system one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts allocations and reallocations, of the whole process and of each thread.
pub struct Counting;

/// Allocations made by the whole process.
pub static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Allocations made by the current thread (other test threads do not count here).
    pub static THREAD_ALLOCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn count() {
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    let _ = THREAD_ALLOCS.try_with(|c| c.set(c.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(p, l, n) }
    }
}
