mod common;
mod qtar_behaviour;
mod qtar_extract;
mod qtar_flags;
mod qtar_oracle;
