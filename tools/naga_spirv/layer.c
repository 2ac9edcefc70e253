/* A Vulkan layer that writes every SPIR-V module an application hands the driver
 * (vkCreateShaderModule) to $SPV_DUMP_DIR/NNNN.spv, in creation order; nothing else is
 * touched. tools/naga_spirv/capture.py builds it and runs it under the wgpu backend, to see
 * the SPIR-V naga makes of our WGSL (bench/matmul_f32_bench.py --spirv times it on Vulkan).
 * One instance and one device at a time: a debugging tool, not a general layer. */
#include <vulkan/vulkan.h>
#include <vulkan/vk_layer.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
static PFN_vkGetInstanceProcAddr next_gipa;
static PFN_vkGetDeviceProcAddr next_gdpa;
static PFN_vkCreateShaderModule next_csm;
static int counter;
static VkResult VKAPI_CALL my_CreateInstance(const VkInstanceCreateInfo *ci, const VkAllocationCallbacks *a, VkInstance *inst) {
    VkLayerInstanceCreateInfo *li = (VkLayerInstanceCreateInfo *)ci->pNext;
    while (li && !(li->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO && li->function == VK_LAYER_LINK_INFO))
        li = (VkLayerInstanceCreateInfo *)li->pNext;
    if (!li) return VK_ERROR_INITIALIZATION_FAILED;
    next_gipa = li->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    li->u.pLayerInfo = li->u.pLayerInfo->pNext;
    PFN_vkCreateInstance f = (PFN_vkCreateInstance)next_gipa(VK_NULL_HANDLE, "vkCreateInstance");
    return f(ci, a, inst);
}
static VkResult VKAPI_CALL my_CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo *ci, const VkAllocationCallbacks *a, VkDevice *dev) {
    VkLayerDeviceCreateInfo *li = (VkLayerDeviceCreateInfo *)ci->pNext;
    while (li && !(li->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO && li->function == VK_LAYER_LINK_INFO))
        li = (VkLayerDeviceCreateInfo *)li->pNext;
    if (!li) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = li->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    next_gdpa = li->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    li->u.pLayerInfo = li->u.pLayerInfo->pNext;
    PFN_vkCreateDevice f = (PFN_vkCreateDevice)gipa(VK_NULL_HANDLE, "vkCreateDevice");
    VkResult r = f(pd, ci, a, dev);
    if (r == VK_SUCCESS) next_csm = (PFN_vkCreateShaderModule)next_gdpa(*dev, "vkCreateShaderModule");
    return r;
}
static VkResult VKAPI_CALL my_CreateShaderModule(VkDevice d, const VkShaderModuleCreateInfo *ci, const VkAllocationCallbacks *a, VkShaderModule *m) {
    const char *dir = getenv("SPV_DUMP_DIR");
    if (dir) {
        char p[512];
        snprintf(p, sizeof p, "%s/%04d.spv", dir, counter++);
        FILE *f = fopen(p, "wb");
        if (f) { fwrite(ci->pCode, 1, ci->codeSize, f); fclose(f); }
    }
    return next_csm(d, ci, a, m);
}
VK_LAYER_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL dump_GetDeviceProcAddr(VkDevice d, const char *n) {
    if (!strcmp(n, "vkCreateShaderModule")) return (PFN_vkVoidFunction)my_CreateShaderModule;
    if (!strcmp(n, "vkGetDeviceProcAddr")) return (PFN_vkVoidFunction)dump_GetDeviceProcAddr;
    return next_gdpa(d, n);
}
VK_LAYER_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL dump_GetInstanceProcAddr(VkInstance i, const char *n) {
    if (!strcmp(n, "vkCreateInstance")) return (PFN_vkVoidFunction)my_CreateInstance;
    if (!strcmp(n, "vkCreateDevice")) return (PFN_vkVoidFunction)my_CreateDevice;
    if (!strcmp(n, "vkGetInstanceProcAddr")) return (PFN_vkVoidFunction)dump_GetInstanceProcAddr;
    if (!strcmp(n, "vkGetDeviceProcAddr")) return (PFN_vkVoidFunction)dump_GetDeviceProcAddr;
    if (!strcmp(n, "vkCreateShaderModule")) return (PFN_vkVoidFunction)my_CreateShaderModule;
    return next_gipa(i, n);
}
