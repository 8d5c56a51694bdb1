//! The model the checks read: lock events and the little data flow the
//! fencing check needs, extracted once per file from the syntax tree and the
//! rule packs.

pub mod chains;
pub mod conn;
pub mod event;
pub mod extract;
pub mod keys;
pub mod lockname;
pub mod locks;
pub mod resolve;
pub mod tokens;

pub use event::*;
