//! An LRU order over dense indices (zones for ZPLRU, global chunk slots for
//! CLRU): a doubly linked list in two `u32` arrays, O(1) push, remove,
//! move-to-back, pop-front and replace-in-place (a relocated chunk keeps
//! its recency).

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone)]
pub(crate) struct Lru {
    prev: Vec<u32>,
    next: Vec<u32>,
    linked: Vec<bool>,
    head: u32,
    tail: u32,
    len: usize,
}

impl Lru {
    pub(crate) fn new(n: usize) -> Lru {
        Lru {
            prev: vec![NIL; n],
            next: vec![NIL; n],
            linked: vec![false; n],
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn contains(&self, i: u32) -> bool {
        self.linked.get(i as usize).copied().unwrap_or(false)
    }

    /// Appends `i` as most recently used (no-op if already linked).
    pub(crate) fn push_back(&mut self, i: u32) {
        if self.contains(i) || i as usize >= self.linked.len() {
            return;
        }
        let iu = i as usize;
        self.prev[iu] = self.tail;
        self.next[iu] = NIL;
        if self.tail != NIL {
            self.next[self.tail as usize] = i;
        } else {
            self.head = i;
        }
        self.tail = i;
        self.linked[iu] = true;
        self.len += 1;
    }

    pub(crate) fn remove(&mut self, i: u32) -> bool {
        if !self.contains(i) {
            return false;
        }
        let iu = i as usize;
        let (p, n) = (self.prev[iu], self.next[iu]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
        self.prev[iu] = NIL;
        self.next[iu] = NIL;
        self.linked[iu] = false;
        self.len -= 1;
        true
    }

    pub(crate) fn touch(&mut self, i: u32) {
        if self.contains(i) && self.tail != i {
            self.remove(i);
            self.push_back(i);
        }
    }

    pub(crate) fn pop_front(&mut self) -> Option<u32> {
        let h = self.head;
        if h == NIL {
            return None;
        }
        self.remove(h);
        Some(h)
    }

    /// `new` takes `old`'s place in the order; `old` leaves the list.
    pub(crate) fn replace(&mut self, old: u32, new: u32) {
        if !self.contains(old) || self.contains(new) || new as usize >= self.linked.len() {
            return;
        }
        let (o, nu) = (old as usize, new as usize);
        let (p, n) = (self.prev[o], self.next[o]);
        self.prev[nu] = p;
        self.next[nu] = n;
        if p != NIL {
            self.next[p as usize] = new;
        } else {
            self.head = new;
        }
        if n != NIL {
            self.prev[n as usize] = new;
        } else {
            self.tail = new;
        }
        self.linked[nu] = true;
        self.linked[o] = false;
        self.prev[o] = NIL;
        self.next[o] = NIL;
    }

    /// Front to back (for audits and tests).
    pub(crate) fn order(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.len);
        let mut i = self.head;
        while i != NIL && v.len() <= self.len {
            v.push(i);
            i = self.next[i as usize];
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_operations() {
        let mut l = Lru::new(8);
        for i in [3, 1, 4, 5] {
            l.push_back(i);
        }
        l.touch(1);
        assert_eq!(l.order(), vec![3, 4, 5, 1]);
        l.replace(4, 7);
        assert_eq!(l.order(), vec![3, 7, 5, 1]);
        assert!(!l.contains(4));
        assert_eq!(l.pop_front(), Some(3));
        assert!(l.remove(1));
        assert_eq!(l.order(), vec![7, 5]);
        assert_eq!(l.len(), 2);
        l.replace(5, 0);
        assert_eq!(l.order(), vec![7, 0]);
        l.push_back(9); // out of range: ignored
        assert_eq!(l.len(), 2);
    }
}
