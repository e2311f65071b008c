//! The console's pages and the pieces they share.

pub mod components;
pub mod data;
#[cfg(feature = "ssr")]
pub mod hydration;
pub mod layout;
pub mod pages;
