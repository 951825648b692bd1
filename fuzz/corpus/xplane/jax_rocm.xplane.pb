
/host:metadata
ê/device:GPU:0Stream #16(Kernel)è"¸ÌØ’b€ü¤" «"F*Bgrid:1280,1,1 block:256,1,1 private_mem:0 group_mem:2112 occ_pct:0"*loop_fusion"*jit_step" "loop_fusion.kd*
program_id*
hlo_module*
hlo_op*kernel_details*correlation_id*
core_count*device_vendor2*AMD2°
ê/device:GPU:1Stream #17(Kernel)è"¸ÌØ’b€ü¤" ¬"F*Bgrid:1280,1,1 block:256,1,1 private_mem:0 group_mem:2112 occ_pct:0"*loop_fusion"*jit_step" "loop_fusion.kd*
program_id*
hlo_module*
hlo_op*kernel_details*correlation_id*
core_count*device_vendor2*AMD2°
õ	/host:CPUDÇHost Threads/583è"*øÄüòa€ß¶" ô" «"*jit_stepDÈHost Threads/584è"*øÄüòa€ß¶" ô" ¬"*jit_step"hipModuleLaunchKernel*
hlo_module*correlation_id*	device_id