/*
 * devinfo.c - a device described for reports: its name, PCI location and the driver's
 * version, as nccl-tests prints them in its "Using devices" lines and cdsl-perf writes into
 * its results files. The driver is loaded through cuda_drv.c, as the GPU backends load it.
 */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "cuda_drv.h"

/* cuda.h's CUdevice_attribute values for the PCI location (driver API reference). */
enum { DEVINFO_PCI_BUS_ID = 33, DEVINFO_PCI_DEVICE_ID = 34, DEVINFO_PCI_DOMAIN_ID = 50 };

int rt_device_describe(int ordinal, cdsl_device_info *out, FILE *log)
{
    memset(out, 0, sizeof *out);
    out->device = ordinal;
    snprintf(out->name, sizeof out->name, "GPU %d", ordinal);
    CuDrv *cu;
    int st = cu_open(&cu, log);
    if (st)
        return st;
    CUdevice dev;
    CUresult r = cu->DeviceGet(&dev, ordinal);
    if (r == CUDA_SUCCESS) {
        out->driver_version = cu->version;
        if (cu->DeviceGetName(out->name, (int)sizeof out->name, dev) != CUDA_SUCCESS)
            snprintf(out->name, sizeof out->name, "GPU %d", ordinal);
        cu->DeviceGetAttribute(&out->pci_domain, DEVINFO_PCI_DOMAIN_ID, dev);
        cu->DeviceGetAttribute(&out->pci_bus, DEVINFO_PCI_BUS_ID, dev);
        cu->DeviceGetAttribute(&out->pci_device, DEVINFO_PCI_DEVICE_ID, dev);
    } else {
        rt_error(log, "cannot describe device %d: %s", ordinal, cu_error_string(cu, r));
        st = CDSL_ERR_SYSTEM;
    }
    cu_close(cu);
    return st;
}
