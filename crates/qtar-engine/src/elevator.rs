//! A pure C-SCAN elevator.
//!
//! Requests carry a position key (a disk byte offset, or an inode number when
//! the layout is unknown). The head sweeps upward: [`Elevator::pop`] returns
//! the pending request with the smallest key at or above the head. A request
//! that arrives behind the head waits for the next sweep, which starts again
//! from the lowest key. No I/O happens here, so the ordering is unit- and
//! property-tested on its own.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A C-SCAN queue of items of type `T`, keyed by position.
#[derive(Debug)]
pub struct Elevator<T> {
    head: u64,
    /// Keys at or above `head`: served in this sweep.
    this_sweep: BinaryHeap<Reverse<Slot<T>>>,
    /// Keys below `head`: they wait for the next sweep.
    next_sweep: BinaryHeap<Reverse<Slot<T>>>,
    seq: u64,
    sweeps: u64,
}

#[derive(Debug)]
struct Slot<T> {
    key: u64,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Slot<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.key, self.seq) == (o.key, o.seq)
    }
}
impl<T> Eq for Slot<T> {}
impl<T> PartialOrd for Slot<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Slot<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.key, self.seq).cmp(&(o.key, o.seq))
    }
}

impl<T> Default for Elevator<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Elevator<T> {
    /// An empty elevator with its head at position 0.
    pub fn new() -> Self {
        Self { head: 0, this_sweep: BinaryHeap::new(), next_sweep: BinaryHeap::new(), seq: 0, sweeps: 0 }
    }

    /// Queues `item` at position `key`. Equal keys are served in arrival order.
    pub fn push(&mut self, key: u64, item: T) {
        let slot = Reverse(Slot { key, seq: self.seq, item });
        self.seq += 1;
        if key >= self.head {
            self.this_sweep.push(slot);
        } else {
            self.next_sweep.push(slot);
        }
    }

    /// The next request in C-SCAN order, with its key; the head moves to it.
    pub fn pop(&mut self) -> Option<(u64, T)> {
        if self.this_sweep.is_empty() {
            if self.next_sweep.is_empty() {
                return None;
            }
            std::mem::swap(&mut self.this_sweep, &mut self.next_sweep);
            self.sweeps += 1;
        }
        let Reverse(slot) = self.this_sweep.pop()?;
        self.head = slot.key;
        Some((slot.key, slot.item))
    }

    /// The head position: the key of the last request popped.
    pub fn head(&self) -> u64 {
        self.head
    }

    /// How many times the head has wrapped back to the lowest key.
    pub fn wraps(&self) -> u64 {
        self.sweeps
    }

    /// Pending requests.
    pub fn len(&self) -> usize {
        self.this_sweep.len() + self.next_sweep.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn behind_the_head_waits_for_the_next_sweep() {
        let mut e = Elevator::new();
        for k in [50, 10, 70] {
            e.push(k, k);
        }
        assert_eq!(e.pop(), Some((10, 10)));
        assert_eq!(e.pop(), Some((50, 50)));
        e.push(20, 20); // behind the head
        e.push(60, 60); // ahead of it
        assert_eq!(e.pop(), Some((60, 60)));
        assert_eq!(e.pop(), Some((70, 70)));
        assert_eq!(e.wraps(), 0);
        assert_eq!(e.pop(), Some((20, 20)));
        assert_eq!(e.wraps(), 1);
        assert_eq!(e.pop(), None);
    }

    #[test]
    fn equal_keys_are_fifo() {
        let mut e = Elevator::new();
        for i in 0..5 {
            e.push(7, i);
        }
        let got: Vec<_> = std::iter::from_fn(|| e.pop()).map(|(_, v)| v).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
    }

    proptest! {
        /// Interleave pushes and pops: each pop is the smallest pending key at or
        /// above the head if there is one, else the smallest pending key; nothing
        /// is lost or duplicated.
        #[test]
        fn cscan_invariants(ops in proptest::collection::vec(proptest::option::of(0u64..1000), 0..300)) {
            let mut e = Elevator::new();
            let mut model: Vec<(u64, usize)> = Vec::new();
            let mut id = 0usize;
            let mut popped = 0usize;
            for op in ops {
                match op {
                    Some(k) => { e.push(k, id); model.push((k, id)); id += 1; }
                    None => {
                        let head = e.head();
                        let want = model.iter().filter(|(k, _)| *k >= head).min().copied()
                            .or_else(|| model.iter().min().copied());
                        let got = e.pop();
                        prop_assert_eq!(got, want);
                        if let Some(w) = want { model.retain(|x| *x != w); popped += 1; }
                    }
                }
                prop_assert_eq!(e.len(), model.len());
            }
            // Drain: one more sweep at most if nothing new arrives.
            let wraps_before = e.wraps();
            let mut last = None;
            while let Some((k, _)) = e.pop() {
                popped += 1;
                if let Some(l) = last { if k < l { prop_assert_eq!(e.wraps(), wraps_before + 1); } }
                last = Some(k);
            }
            prop_assert!(e.wraps() <= wraps_before + 1);
            prop_assert_eq!(popped, id);
        }

        /// Without arrivals behind the head, one sweep visits keys in ascending order.
        #[test]
        fn one_sweep_is_sorted(keys in proptest::collection::vec(0u64..u64::MAX, 0..200)) {
            let mut e = Elevator::new();
            for (i, k) in keys.iter().enumerate() { e.push(*k, i); }
            let got: Vec<u64> = std::iter::from_fn(|| e.pop()).map(|(k, _)| k).collect();
            let mut want = keys.clone();
            want.sort();
            prop_assert_eq!(got, want);
            prop_assert_eq!(e.wraps(), 0);
        }
    }
}
