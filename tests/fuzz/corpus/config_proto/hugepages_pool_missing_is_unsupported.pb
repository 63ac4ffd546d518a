
roced/v1
NodeConfig*	
1Gi