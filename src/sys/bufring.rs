//! The provided receive buffers of a ring: a ring of buffer descriptors the kernel takes from and
//! gives back through completions, the memory they describe, and [`RecvBuf`], the guard that holds
//! one handed-over buffer and gives it back when dropped.

use io_uring::IoUring;
use io_uring::types::BufRingEntry;
use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicU16, Ordering};

/// One provided-buffer descriptor as the kernel lays it out (`struct io_uring_buf`). The ring's tail is
/// the `resv` field of entry 0: it is only ever written through [`BufRing::publish`], and entries are
/// written field by field, so no reference covers the tail the kernel reads.
#[repr(C)]
struct RawBuf {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

const _: () = assert!(std::mem::size_of::<RawBuf>() == std::mem::size_of::<BufRingEntry>());

/// The buffers and their descriptor ring. The kernel writes into the memory, so it is held by a raw
/// pointer (never borrowed as a whole); a buffer is read only through the [`RecvBuf`] made from the
/// completion that handed it over, which gives it back when dropped. Registered with the ring on
/// creation, it is unregistered by [`BufRing::unregister`] before it is freed; dropped while still
/// registered (the kernel may still fill its buffers) it leaks its memory instead of freeing it.
pub(super) struct BufRing {
    entries: *mut RawBuf,
    ring_bytes: usize,
    count: u16,
    tail: Cell<u16>,
    size: usize,
    memory: *mut u8,
    memory_len: usize,
    group: u16,
    registered: Cell<bool>,
}

impl BufRing {
    /// `count` (a power of two) buffers of `size` bytes, registered with `ring` as group `group`.
    pub(super) fn new(ring: &IoUring, group: u16, count: u16, size: usize) -> io::Result<BufRing> {
        debug_assert!(count.is_power_of_two());
        let ring_bytes = count as usize * std::mem::size_of::<RawBuf>();
        // SAFETY: an anonymous private mapping; checked for failure below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let memory_len = count as usize * size;
        let memory = Box::into_raw(vec![0u8; memory_len].into_boxed_slice()).cast::<u8>();
        let br = BufRing {
            entries: ptr.cast(),
            ring_bytes,
            count,
            tail: Cell::new(0),
            size,
            memory,
            memory_len,
            group,
            registered: Cell::new(false),
        };
        // SAFETY: the mapping is page aligned and `count` entries long; it and the memory stay until
        // `unregister` (or are leaked).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(ptr as u64, count, group, 0)?;
        }
        br.registered.set(true);
        for bid in 0..count {
            br.give_back(bid);
        }
        br.publish();
        Ok(br)
    }

    /// Puts buffer `bid` back at the tail; the kernel sees it after [`Self::publish`]. Called only by
    /// a [`RecvBuf`]'s drop and by `new`, once per handed-over buffer.
    fn give_back(&self, bid: u16) {
        let tail = self.tail.get();
        let slot = (tail & (self.count - 1)) as usize;
        let addr = self.memory as u64 + (bid as usize * self.size) as u64;
        // SAFETY: `slot` < `count`, within the mapping; the kernel reads only entries between its
        // head and the published tail, and this one is past the tail until `publish`. The fields
        // are written one by one: entry 0's `resv` (the tail) is not touched.
        unsafe {
            let e = self.entries.add(slot);
            std::ptr::addr_of_mut!((*e).addr).write(addr);
            std::ptr::addr_of_mut!((*e).len).write(self.size as u32);
            std::ptr::addr_of_mut!((*e).bid).write(bid);
        }
        self.tail.set(tail.wrapping_add(1));
    }

    /// Lets the kernel see the buffers given back since the last call.
    pub(super) fn publish(&self) {
        // SAFETY: the tail field of the first entry, as the kernel's ABI defines it: a u16, aligned,
        // in the mapping, and only ever accessed atomically from here.
        let tail = unsafe { AtomicU16::from_ptr(std::ptr::addr_of_mut!((*self.entries).resv)) };
        tail.store(self.tail.get(), Ordering::Release);
    }

    /// Ends the registration with `ring`: the kernel takes no buffer from it after this, and the
    /// memory is freed with the last guard.
    pub(super) fn unregister(&self, ring: &IoUring) {
        if self.registered.get() && ring.submitter().unregister_buf_ring(self.group).is_ok() {
            self.registered.set(false);
        }
    }

    /// The guard of buffer `bid`, which a completion handed over with `len` bytes in it.
    pub(super) fn handed_over(self: &Rc<Self>, bid: u16, len: usize) -> Option<RecvBuf> {
        (bid < self.count).then(|| RecvBuf {
            ring: self.clone(),
            bid,
            len: len.min(self.size),
        })
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        if self.registered.get() {
            // The kernel may still use them: leaked, not freed under it.
            return;
        }
        // SAFETY: the mapping and the memory made in `new`, no longer registered with any ring, and
        // no guard left (each holds the `Rc` this is the last of).
        unsafe {
            libc::munmap(self.entries.cast(), self.ring_bytes);
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.memory,
                self.memory_len,
            )));
        }
    }
}

/// One receive buffer the kernel handed over with a completion, and the bytes it wrote there. The
/// kernel does not write it again until this guard is dropped, which gives it back (the kernel sees
/// it at the ring's next submission). It cannot be made for any other buffer, nor given back twice.
pub struct RecvBuf {
    ring: Rc<BufRing>,
    bid: u16,
    len: usize,
}

impl RecvBuf {
    /// The bytes received.
    pub fn data(&self) -> &[u8] {
        // SAFETY: within the memory (`bid` < count, `len` <= size, checked in `handed_over`); the
        // kernel handed buffer `bid` over and does not write it before this guard gives it back.
        unsafe {
            std::slice::from_raw_parts(
                self.ring.memory.add(self.bid as usize * self.ring.size),
                self.len,
            )
        }
    }
}

impl Drop for RecvBuf {
    fn drop(&mut self) {
        self.ring.give_back(self.bid);
    }
}
