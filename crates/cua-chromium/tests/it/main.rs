//! Integration tests against real Chromium. They never skip: without Chromium they fail with
//! the install step (`apt-get install -y chromium`).

mod actions;
mod failures;
mod fixture;
mod hostile;
mod isolation;
mod owner;
mod pages;
mod png;
mod reuse;
mod screenshots;
mod support;
mod waits;
