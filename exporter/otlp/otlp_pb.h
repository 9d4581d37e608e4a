/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_pb: short names for the protobuf-c structs of OTLP profiles v1development
 * (opentelemetry-proto profiles/v1development/profiles.proto, common/v1/common.proto,
 * resource/v1/resource.proto, collector/profiles/v1development/profiles_service.proto), as
 * generated into the build directory by protoc-c. Shared by the encoder (otlp_encode.c), the
 * reader of `spanprof view` (view/read.c) and the tests and benchmarks that build OTLP
 * messages by hand (test/view/test_view.c, bench/view/view.c). Types only: no code, no ownership.
 *
 * PB(name) names a generated function of the profiles package: PB(sample__init)(s).
 * ANY(c) names an AnyValue oneof case: ANY(STRING_VALUE), ANY(INT_VALUE).
 */
#ifndef SPANPROF_OTLP_PB_H
#define SPANPROF_OTLP_PB_H

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "opentelemetry/proto/profiles/v1development/profiles.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    pb_request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesData pb_data;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary pb_dict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles pb_rp;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles pb_sp;
typedef Opentelemetry__Proto__Profiles__V1development__Profile pb_profile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType pb_vt;
typedef Opentelemetry__Proto__Profiles__V1development__Sample pb_sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping pb_mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location pb_location;
typedef Opentelemetry__Proto__Profiles__V1development__Line pb_line;
typedef Opentelemetry__Proto__Profiles__V1development__Function pb_function;
typedef Opentelemetry__Proto__Profiles__V1development__Link pb_link;
typedef Opentelemetry__Proto__Profiles__V1development__Stack pb_stack;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit pb_kvu;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_kv;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;

#define PB(name) opentelemetry__proto__profiles__v1development__##name
#define ANY(c) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##c

#endif
