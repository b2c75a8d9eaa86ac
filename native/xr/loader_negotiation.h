/* The OpenXR loader's negotiation interface, declared as the OpenXR loader specification
 * ("API Layer Negotiation", "Runtime Negotiation") defines it. Debian's libopenxr-dev 1.0.20
 * ships openxr.h and the loader but not the loader's own loader_interfaces.h, so the layer and
 * the test runtime declare these structures here, with the same layout and values. */
#ifndef JITTERLAB_XR_LOADER_NEGOTIATION_H
#define JITTERLAB_XR_LOADER_NEGOTIATION_H

#include <openxr/openxr.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum XrLoaderInterfaceStructs {
  XR_LOADER_INTERFACE_STRUCT_UNINTIALIZED = 0,
  XR_LOADER_INTERFACE_STRUCT_LOADER_INFO,
  XR_LOADER_INTERFACE_STRUCT_API_LAYER_REQUEST,
  XR_LOADER_INTERFACE_STRUCT_RUNTIME_REQUEST,
  XR_LOADER_INTERFACE_STRUCT_API_LAYER_CREATE_INFO,
  XR_LOADER_INTERFACE_STRUCT_API_LAYER_NEXT_INFO,
} XrLoaderInterfaceStructs;

#define XR_LOADER_INFO_STRUCT_VERSION 1
typedef struct XrNegotiateLoaderInfo {
  XrLoaderInterfaceStructs structType;
  uint32_t structVersion;
  size_t structSize;
  uint32_t minInterfaceVersion;
  uint32_t maxInterfaceVersion;
  XrVersion minApiVersion;
  XrVersion maxApiVersion;
} XrNegotiateLoaderInfo;

#define XR_CURRENT_LOADER_API_LAYER_VERSION 1
#define XR_CURRENT_LOADER_RUNTIME_VERSION 1

struct XrApiLayerCreateInfo;
typedef XrResult(XRAPI_PTR* PFN_xrCreateApiLayerInstance)(const XrInstanceCreateInfo* info,
                                                          const struct XrApiLayerCreateInfo* apiLayerInfo,
                                                          XrInstance* instance);

#define XR_API_LAYER_INFO_STRUCT_VERSION 1
typedef struct XrNegotiateApiLayerRequest {
  XrLoaderInterfaceStructs structType;
  uint32_t structVersion;
  size_t structSize;
  uint32_t layerInterfaceVersion;
  XrVersion layerApiVersion;
  PFN_xrGetInstanceProcAddr getInstanceProcAddr;
  PFN_xrCreateApiLayerInstance createApiLayerInstance;
} XrNegotiateApiLayerRequest;

#define XR_RUNTIME_INFO_STRUCT_VERSION 1
typedef struct XrNegotiateRuntimeRequest {
  XrLoaderInterfaceStructs structType;
  uint32_t structVersion;
  size_t structSize;
  uint32_t runtimeInterfaceVersion;
  XrVersion runtimeApiVersion;
  PFN_xrGetInstanceProcAddr getInstanceProcAddr;
} XrNegotiateRuntimeRequest;

#define XR_API_LAYER_NEXT_INFO_STRUCT_VERSION 1
typedef struct XrApiLayerNextInfo {
  XrLoaderInterfaceStructs structType;
  uint32_t structVersion;
  size_t structSize;
  char layerName[XR_MAX_API_LAYER_NAME_SIZE];
  PFN_xrGetInstanceProcAddr nextGetInstanceProcAddr;
  PFN_xrCreateApiLayerInstance nextCreateApiLayerInstance;
  struct XrApiLayerNextInfo* next;
} XrApiLayerNextInfo;

#define XR_API_LAYER_MAX_SETTINGS_PATH_SIZE 512
#define XR_API_LAYER_CREATE_INFO_STRUCT_VERSION 1
typedef struct XrApiLayerCreateInfo {
  XrLoaderInterfaceStructs structType;
  uint32_t structVersion;
  size_t structSize;
  void* loaderInstance;
  char settings_file_location[XR_API_LAYER_MAX_SETTINGS_PATH_SIZE];
  XrApiLayerNextInfo* nextInfo;
} XrApiLayerCreateInfo;

#ifdef __cplusplus
}
#endif

#endif
