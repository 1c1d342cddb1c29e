import kerntune as kt

problem = kt.Problem(name="broken"
