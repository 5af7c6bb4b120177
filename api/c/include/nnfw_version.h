/*
 * nnfw_version.h: the version nnfw_query_info_u32(NNFW_INFO_ID_VERSION) reports, as 0xMMmmmmPP
 * (major, minor, patch). This is nnrt's own version (the workspace version in Cargo.toml), not
 * onert's.
 *
 * Licensed under the Apache License, Version 2.0.
 */
#ifndef __NNFW_VERSION_H__
#define __NNFW_VERSION_H__

#define NNFW_VERSION 0x00000100

#endif /* __NNFW_VERSION_H__ */
