/* SPDX-License-Identifier: GPL-2.0 */
/*
 * offcpu profile (--profile offcpu, docs/profile-types.md): its programs, included by sampler.bpf.c
 * after sp_sample_begin()/sp_sample_finish(). Loaded only when the profile type is selected.
 */
#ifndef SPANPROF_OFFCPU_BPF_H
#define SPANPROF_OFFCPU_BPF_H

#endif
