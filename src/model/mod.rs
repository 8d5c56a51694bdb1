//! The model the checks read: lock events and the little data flow the
//! fencing check needs, extracted once per file from the syntax tree and the
//! rule packs.

pub mod chains;
pub mod conn;
pub mod event;
pub mod extract;

/// Rust's primitive integer types, by name.
pub const INTEGER_TYPES: [&str; 12] = [
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
];
pub mod keys;
pub mod lockname;
pub mod locks;
pub mod missed_release;
pub mod resolve;
pub mod tokens;

pub use event::*;
